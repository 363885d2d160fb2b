"""`registry import` of the real Laguna B70 capsule (read-only): manifest checked,
absent files reported and recorded, results re-derived from the raw rows."""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
from pathlib import Path

import pytest

from registry.errors import ExitCode
from tests.conftest import FIXTURES, ROOT

CAPSULE = FIXTURES / "laguna-b70-record"
MANIFEST = CAPSULE / "evidence" / "record-run.sha256"


def manifest_entries() -> list[str]:
    return [line.split(None, 1)[1].strip() for line in MANIFEST.read_text().splitlines() if line]


def tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def in_repo(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # where recipes/ is found by default


@pytest.fixture
def capsule_copy(tmp_path) -> Path:
    copy = tmp_path / "capsule"
    shutil.copytree(CAPSULE, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def imported(cli, *args) -> dict:
    r = cli("import", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_import_the_laguna_capsule(cli, store_home, in_repo, signing_keys) -> None:
    before = tree_digest(CAPSULE)
    done = imported(cli, CAPSULE)
    assert tree_digest(CAPSULE) == before  # read-only input stays untouched
    assert done["recipe"].endswith("recipes/laguna-s21-b70-exact-short-decode.toml")
    shown = json.loads(cli("show", done["record"]["id"][:12], "--json").stdout)
    p = shown["statement"]["predicate"]
    [suite] = p["results"]
    assert suite["metrics"]["decode_tok_s.median"]["value"] == 101.94172124017027
    assert suite["metrics"]["decode_tok_s.median"]["formula"] == (
        "median over unflagged rows of 99 / (t[99] - t[0])")
    assert suite["metrics"]["decode_tok_s_other_formula.median"]["value"] == 102.97143559613157
    assert suite["metrics"]["decode_tok_s_other_formula.median"]["formula"] == (
        "median over unflagged rows of 100 / (t[99] - t[0])")
    assert suite["rows"] == 13
    i = p["imported"]
    present = [f"evidence/{e}" for e in manifest_entries() if (MANIFEST.parent / e).is_file()]
    absent = [f"evidence/{e}" for e in manifest_entries() if not (MANIFEST.parent / e).is_file()]
    assert sorted(i["verified"]) == sorted(present) and len(present) == 7
    assert sorted(i["missing"]) == sorted(absent) and "evidence/record-run/status.txt" in absent
    assert i["manifest_sha256"] == hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    assert i["capsule"] == "laguna-b70-record" and i["unlisted"] == []
    assert i["importer"] == shown["signer"] and i["lab_identity"]["exact_max_m"] == "12"
    kv = p["identity"]["fields"]["precision.kv_cache"]
    assert (kv["resolved"], kv["status"]) == ("bfloat16", "confirmed")
    assert {s["role"]: s["commit"] for s in p["sources"]}["vllm"] == (
        "e596ef1543466ae1a05e5bb8091f58872e2b18ba")
    assert p["run"]["state"] == "unknown" and "status.txt" in p["run"]["reason"]
    capsule_files = sorted(str(f.relative_to(CAPSULE)) for f in CAPSULE.rglob("*") if f.is_file())
    names = sorted(s["name"] for s in shown["statement"]["subject"])
    assert names == sorted([*capsule_files, "bench.json"])
    assert cli("verify", done["record"]["id"]).exit_code == 0
    assert json.loads(cli("list", "--json", "--where", "imported=true").stdout)[0]["id"] == (
        done["record"]["id"])


def test_converted_rows_keep_every_token_and_timestamp(cli, store_home, in_repo) -> None:
    from registry.rundir import Bench
    from registry.store.objects import ObjectStore

    done = imported(cli, CAPSULE)
    statement = json.loads(cli("show", done["record"]["id"], "--json").stdout)["statement"]
    digest = next(s for s in statement["subject"] if s["name"] == "bench.json")["digest"]["sha256"]
    bench = Bench.model_validate_json(ObjectStore(store_home.objects).path(digest).read_bytes())
    identity = (CAPSULE / "evidence" / "record-run" / "identity.txt").read_text()
    [suite_sha256] = [line.split("=")[1] for line in identity.splitlines()
                      if line.startswith("suite_sha256=")]
    assert bench.suites[0].sha256 == suite_sha256  # the lab's bench.json does not name it
    lab = json.loads((CAPSULE / "evidence" / "record-run" / "bench.json").read_text())["rows"]
    for row, raw in zip(bench.rows, lab, strict=True):
        assert row.token_ids == raw["token_ids"] and row.token_times_s == raw["token_id_offsets_s"]
        assert row.text_sha256 == raw["sha256"] and row.cached_tokens == 0
    spans = [raw["token_id_offsets_s"][99] - raw["token_id_offsets_s"][0] for raw in lab]
    assert statistics.median(99 / s for s in spans) == done["results"][0]["metrics"][
        "decode_tok_s.median"]["value"]


def test_absent_files_are_reported(cli, store_home, in_repo) -> None:
    r = cli("import", CAPSULE)
    assert r.exit_code == 0, r.stderr
    assert "7 files verified, 32 listed but absent" in r.stdout
    assert "absent: evidence/record-run/cleanup-status.txt" in r.stdout
    assert ("101.94172124017027 tok/s = median over unflagged rows of 99 / (t[99] - t[0])"
            in r.stdout)


def test_a_changed_capsule_file_is_refused(cli, store_home, in_repo, capsule_copy) -> None:
    log = capsule_copy / "evidence" / "record-run" / "server.log"
    log.write_bytes(log.read_bytes().replace(b"bfloat16", b"bfloat17", 1))
    r = cli("import", capsule_copy)
    assert r.exit_code == ExitCode.FAILED
    assert "server.log: does not match evidence/record-run.sha256 line" in r.stderr
    assert json.loads(cli("list", "--json").stdout) == []


def test_unlisted_files_are_sealed_and_reported(cli, store_home, in_repo, capsule_copy) -> None:
    (capsule_copy / "evidence" / "record-run" / "notes.txt").write_text("added later\n")
    done = imported(cli, capsule_copy)
    assert done["imported"]["unlisted"] == ["evidence/record-run/notes.txt"]


@pytest.mark.parametrize("damage, code, message", [
    (lambda c: (c / "evidence" / "record-run.sha256").unlink(), ExitCode.INVALID_INPUT,
     "not a lab record capsule"),
    (lambda c: (c / "evidence" / "record-run" / "bench.json").unlink(), ExitCode.INVALID_INPUT,
     "evidence/record-run/bench.json is absent"),
    (lambda c: (c / "evidence" / "record-run.sha256").write_text("abc  ../../etc/passwd\n"),
     ExitCode.INVALID_INPUT, "not a `sha256  relative/path` line"),
])
def test_bad_capsules(cli, store_home, in_repo, capsule_copy, damage, code, message) -> None:
    damage(capsule_copy)
    r = cli("import", capsule_copy)
    assert r.exit_code == code and message in r.stderr and "Traceback" not in r.stderr


def test_a_recipe_that_does_not_match_is_refused(cli, store_home, in_repo) -> None:
    long_context = ROOT / "recipes" / "laguna-s21-b70-long-context-service.toml"
    r = cli("import", CAPSULE, "--recipe", long_context)
    assert r.exit_code == ExitCode.REFUSED
    assert "precision.kv_cache declared 'checkpoint', resolved 'bfloat16'" in r.stderr


def test_no_recipe_found_asks_for_one(cli, store_home, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    import registry.importer

    monkeypatch.setattr(registry.importer, "recipe_dirs", lambda: [])
    r = cli("import", CAPSULE)
    assert r.exit_code == ExitCode.NOT_FOUND and "--recipe FILE" in r.stderr


def test_a_copy_of_the_recipes_is_the_same_recipe(cli, store_home, tmp_path, monkeypatch) -> None:
    """From another clone: its recipes/ and the installed package's hold the same files."""
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    shutil.copytree(ROOT / "identities", tmp_path / "identities")
    monkeypatch.chdir(tmp_path)
    r = cli("import", CAPSULE, "--json")
    assert r.exit_code == 0, r.stderr
