"""`registry resolve RECORD`: a record re-resolved from its own sealed evidence, with no
checkpoint on disk, reproduces the signed identity field by field; a signed identity
the evidence does not support is reported field by field."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from registry.errors import ExitCode
from tests.conftest import FIXTURES, ROOT, resolved_identity

CAPTURED = ROOT / "tests" / "data" / "cpu-runs" / "tiny-checkpoint-kv"
CHECKPOINT = "tiny-llama-kv-fp8"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The tiny compressed-tensors checkpoint with calibrated FP8 KV scales, built by
    tools/tiny_checkpoint.py (the checkpoint the captured run served)."""
    out = tmp_path_factory.mktemp("models")
    subprocess.run([sys.executable, str(ROOT / "tools" / "tiny_checkpoint.py"), "--out", str(out),
                    CHECKPOINT], check=True, capture_output=True)
    return out


@pytest.fixture
def sealed(cli, store_home, models, tmp_path, monkeypatch, hash_cache):
    """The captured tiny-checkpoint-kv run sealed against the checkpoint, which is then
    moved away: nothing but the record is left to resolve from."""
    run = shutil.copytree(CAPTURED, tmp_path / "run")
    log = run / "server.log"
    here = shutil.copytree(models, tmp_path / "models")
    log.write_text(log.read_text().replace("/tmp/registry-models", str(here)))
    monkeypatch.setenv("REGISTRY_MODELS", str(here))
    r = cli("seal", run, "--json")
    assert r.exit_code == 0, r.stderr
    shutil.rmtree(here)
    monkeypatch.setenv("REGISTRY_MODELS", "/elsewhere")  # a reviewer's machine
    return json.loads(r.stdout)["id"], run


def reresolved(cli, rid: str) -> tuple[int, dict]:
    r = cli("resolve", rid[:12], "--json")
    assert "Traceback" not in r.stderr, r.stderr
    return r.exit_code, json.loads(r.stdout)


def test_the_checkpoint_scheme_record_reproduces_without_the_checkpoint(cli, sealed) -> None:
    rid, _ = sealed
    signed = json.loads(cli("show", rid[:12], "--json").stdout)["statement"]["predicate"]
    code, report = reresolved(cli, rid)
    assert code == 0 and report["reproduced"], [f for f in report["fields"] if not f["same"]]
    fields = {f["name"]: f for f in report["fields"]}
    assert set(fields) == set(signed["identity"]["fields"])
    for name, field in signed["identity"]["fields"].items():  # every field, every value
        assert fields[name]["again"] == field.get("resolved"), name
        assert fields[name]["status"] == field["status"], name
    assert fields["precision.kv_cache"]["again"] == "fp8_e4m3"
    assert fields["precision.kv_scales"]["again"].startswith("calibrated")
    assert fields["model.manifest_sha256"]["again"] is not None
    assert "evidence/checkpoint/safetensors.json" in report["evidence"]
    text = cli("resolve", rid[:12]).stdout
    assert f"{len(fields)}/{len(fields)} fields reproduced" in text


def test_a_signed_identity_the_evidence_contradicts_differs(cli, sealed, seal_run_dir,
                                                             store_home) -> None:
    """Sealed with a claimed identity (BF16 KV) beside evidence that proves FP8."""
    from registry.store.objects import ObjectStore
    from registry.store.writer import Artifact

    rid, run = sealed
    subjects = json.loads(cli("show", rid[:12], "--json").stdout)["statement"]["subject"]
    store = ObjectStore(store_home.objects)
    evidence = [Artifact(name=s["name"], path=store.path(s["digest"]["sha256"]))
                for s in subjects if s["name"].startswith("evidence/")]
    assert len(evidence) == 4
    claimed = seal_run_dir(run, identity=resolved_identity(kv_cache="bfloat16"), extra=evidence)
    code, report = reresolved(cli, claimed.id)
    assert code == ExitCode.FAILED and not report["reproduced"]
    differs = {f["name"]: f for f in report["fields"] if not f["same"]}
    assert differs["precision.kv_cache"]["signed"] == "bfloat16"
    assert differs["precision.kv_cache"]["again"] != "bfloat16"


def test_an_imported_lab_capsule_reproduces(cli, store_home, signing_keys) -> None:
    r = cli("import", FIXTURES / "laguna-b70-record", "--json")
    assert r.exit_code == 0, r.stderr
    [done] = json.loads(r.stdout)
    code, report = reresolved(cli, done["record"]["id"])
    assert code == 0, [f for f in report["fields"] if not f["same"]]
    resolved = [f for f in report["fields"] if f["again"] is not None]
    assert len(resolved) >= 10 and all(f["same"] for f in report["fields"])


def test_a_record_whose_object_is_missing_cannot_be_resolved(cli, sealed, store_home) -> None:
    rid, _ = sealed
    shown = json.loads(cli("show", rid[:12], "--json").stdout)["statement"]
    digest = next(s for s in shown["subject"] if s["name"] == "evidence/checkpoint/config.json")
    path = store_home.objects / "sha256" / digest["digest"]["sha256"][:2] / \
        digest["digest"]["sha256"][2:]
    path.unlink()
    r = cli("resolve", rid[:12])
    assert r.exit_code == ExitCode.UNVERIFIABLE and "registry pull" in r.stderr


def review(cli, rid: str) -> tuple[int, dict]:
    r = cli("review", rid[:12], "--json")
    assert "Traceback" not in r.stderr, r.stderr
    return r.exit_code, json.loads(r.stdout)


def test_review_accepts_rejects_and_asks_for_evidence(cli, sealed, store_home) -> None:
    rid, _ = sealed
    code, report = review(cli, rid)
    # every part checks out, but the captured run's rows all arrived in bursts: its
    # degraded measurement is never accepted silently
    assert code == ExitCode.UNVERIFIABLE and report["verdict"] == "needs evidence", report
    parts = {f["part"]: f["status"] for f in report["findings"]}
    assert parts["identity"] == parts["figures"] == parts["contract"] == "ok"
    assert parts["quality"] == "needs evidence"
    [quality] = [f["detail"] for f in report["findings"] if f["part"] == "quality"]
    assert "degraded" in quality and "arrived in bursts" in quality
    shown = json.loads(cli("show", rid[:12], "--json").stdout)["statement"]["subject"]
    digests = {s["name"]: s["digest"]["sha256"] for s in shown}
    bench = store_home.objects / "sha256" / digests["bench.json"][:2] / digests["bench.json"][2:]
    data = bench.read_bytes()
    bench.chmod(0o644)
    bench.write_bytes(data + b" ")  # the same rows, but not the signed bytes
    code, report = review(cli, rid)
    assert code == ExitCode.FAILED and report["verdict"] == "reject"
    assert any(f["part"] == "figures" and f["status"] == "reject" for f in report["findings"])
    bench.unlink()
    code, report = review(cli, rid)
    assert code == ExitCode.UNVERIFIABLE and report["verdict"] == "needs evidence", report


def test_review_of_an_imported_capsule_checks_the_published_figures(cli, store_home,
                                                                     signing_keys) -> None:
    r = cli("import", FIXTURES / "laguna-b70-record", "--json")
    [done] = json.loads(r.stdout)
    code, report = review(cli, done["record"]["id"])
    assert code == 0 and report["verdict"] == "accept", report
    assert {"part": "quality", "status": "ok"}.items() <= next(
        f for f in report["findings"] if f["part"] == "quality").items()
    [published] = [f for f in report["findings"] if f["part"] == "published"]
    assert published["status"] == "ok" and "published figures agree" in published["detail"]
