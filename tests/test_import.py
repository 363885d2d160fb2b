"""`registry import` of the real Laguna B70 capsule (read-only): manifest checked,
absent files reported and recorded, results re-derived from the raw rows, the identity
declared by the capsule's own files when no recipe is given."""

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
def capsule_copy(tmp_path) -> Path:
    copy = tmp_path / "capsule"
    shutil.copytree(CAPSULE, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def imported(cli, *args) -> dict:
    """The one record a single-arm capsule imports as."""
    r = cli("import", *args, "--json")
    assert r.exit_code == 0, r.stderr
    [record] = json.loads(r.stdout)
    return record


def test_import_the_laguna_capsule(cli, store_home, signing_keys) -> None:
    before = tree_digest(CAPSULE)
    done = imported(cli, CAPSULE)
    assert tree_digest(CAPSULE) == before  # read-only input stays untouched
    assert done.get("recipe") is None and done["arm"] == "evidence/record-run"
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
    assert i["importer"] == shown["check"]["signer"] and i["lab_identity"]["exact_max_m"] == "12"
    kv = p["identity"]["fields"]["precision.kv_cache"]
    assert (kv["declared"], kv["resolved"], kv["status"]) == ("bfloat16", "bfloat16", "confirmed")
    assert i["declared_by"]["precision.kv_cache"] == (
        "evidence/record-run/server.log:7 (non-default args)")
    assert i["declared_by"]["engine.commit"] == "evidence/record-run/identity.txt"
    assert p["identity"]["fields"]["engine.commit"]["declared"] == (
        "e596ef1543466ae1a05e5bb8091f58872e2b18ba")
    assert {s["role"]: s["commit"] for s in p["sources"]}["vllm"] == (
        "e596ef1543466ae1a05e5bb8091f58872e2b18ba")
    assert p["run"]["state"] == "unknown" and "status.txt" in p["run"]["reason"]
    capsule_files = sorted(str(f.relative_to(CAPSULE)) for f in CAPSULE.rglob("*") if f.is_file())
    names = sorted(s["name"] for s in shown["statement"]["subject"])
    assert names == sorted([*capsule_files, "bench.json"])
    assert p["artifacts"]["bench.json"] == "bench.json"
    assert p["artifacts"]["bench.original.json"] == "evidence/record-run/bench.json"
    assert cli("verify", done["record"]["id"]).exit_code == 0
    assert json.loads(cli("list", "--json", "--where", "imported=true").stdout)[0]["id"] == (
        done["record"]["id"])


def test_converted_rows_keep_every_token_and_timestamp(cli, store_home) -> None:
    from registry.formats.rundir import Bench
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


def test_absent_files_are_reported(cli, store_home) -> None:
    r = cli("import", CAPSULE)
    assert r.exit_code == 0, r.stderr
    assert "7 files verified, 32 listed but absent" in r.stdout
    assert "absent: evidence/record-run/cleanup-status.txt" in r.stdout
    assert ("101.94172124017027 tok/s = median over unflagged rows of 99 / (t[99] - t[0])"
            in r.stdout)


def test_a_changed_capsule_file_is_refused(cli, store_home, capsule_copy) -> None:
    log = capsule_copy / "evidence" / "record-run" / "server.log"
    log.write_bytes(log.read_bytes().replace(b"bfloat16", b"bfloat17", 1))
    r = cli("import", capsule_copy)
    assert r.exit_code == ExitCode.FAILED
    assert "server.log: does not match evidence/record-run.sha256 line" in r.stderr
    assert json.loads(cli("list", "--json").stdout) == []


def test_unlisted_files_are_sealed_and_reported(cli, store_home, capsule_copy) -> None:
    (capsule_copy / "evidence" / "record-run" / "notes.txt").write_text("added later\n")
    done = imported(cli, capsule_copy)
    assert done["imported"]["unlisted"] == ["evidence/record-run/notes.txt"]


@pytest.mark.parametrize("damage, code, message", [
    (lambda c: (c / "evidence" / "record-run.sha256").write_text("abc  ../../etc/passwd\n"),
     ExitCode.INVALID_INPUT, "not a `sha256  relative/path` line"),
    (lambda c: (c / "evidence" / "record-run.sha256").write_text(
        "0" * 64 + "  /etc/passwd\n"), ExitCode.INVALID_INPUT, "relative/path"),
    (lambda c: (c / "evidence" / "record-run" / "x.log").symlink_to("/etc/passwd"),
     ExitCode.INVALID_INPUT, "x.log: a symbolic link (to /etc/passwd) in the capsule"),
    (lambda c: (c / "evidence" / "linked").symlink_to(c.parent), ExitCode.INVALID_INPUT,
     "linked: a symbolic link"),
    (lambda c: [p.unlink() for p in c.rglob("*") if p.is_file()], ExitCode.INVALID_INPUT,
     "no run evidence found"),
])
def test_bad_capsules(cli, store_home, capsule_copy, damage, code, message) -> None:
    damage(capsule_copy)
    r = cli("import", capsule_copy)
    assert r.exit_code == code and message in r.stderr and "Traceback" not in r.stderr
    assert json.loads(cli("list", "--json").stdout) == []  # nothing half-written


def test_a_capsule_without_its_manifest_still_imports(cli, store_home, capsule_copy) -> None:
    (capsule_copy / "evidence" / "record-run.sha256").unlink()
    done = imported(cli, capsule_copy)
    assert "manifest" not in done["imported"] and done["imported"]["verified"] == []
    assert done["results"][0]["rows"] == 13


def test_a_capsule_without_rows_imports_without_results(cli, store_home, capsule_copy) -> None:
    (capsule_copy / "evidence" / "record-run" / "bench.json").unlink()
    done = imported(cli, capsule_copy)
    assert done["results"] == [] and "evidence/record-run/bench.json" in done["imported"][
        "missing"]


def test_importing_twice_gives_the_same_record(cli, store_home) -> None:
    first, again = imported(cli, CAPSULE), imported(cli, CAPSULE)
    assert again["record"]["id"] == first["record"]["id"] and again["already"]
    assert not first["already"]
    assert len(json.loads(cli("list", "--json").stdout)) == 1


def test_hand_pointed_files_must_be_inside_the_capsule(cli, store_home, capsule_copy,
                                                       tmp_path) -> None:
    outside = tmp_path / "server.log"
    outside.write_text("x\n")
    r = cli("import", capsule_copy, "--log", outside)
    assert r.exit_code == ExitCode.INVALID_INPUT and "must be a file inside the capsule" in (
        r.stderr)
    run = capsule_copy / "evidence" / "record-run"
    (run / "server.log").rename(run / "engine-output.txt")
    done = imported(cli, capsule_copy, "--log", run / "engine-output.txt", "--bench",
                    run / "bench.json")
    p = done["imported"]
    assert p["declared_by"]["parallel.tensor"] == (
        "evidence/record-run/engine-output.txt:7 (non-default args)")


def test_a_recipe_that_does_not_match_is_refused(cli, store_home) -> None:
    long_context = ROOT / "recipes" / "laguna-s21-b70-long-context-service.toml"
    r = cli("import", CAPSULE, "--recipe", long_context)
    assert r.exit_code == ExitCode.REFUSED
    assert "precision.kv_cache declared 'checkpoint', resolved 'bfloat16'" in r.stderr


def test_the_matching_recipe_is_used_when_named(cli, store_home) -> None:
    recipe = ROOT / "recipes" / "laguna-s21-b70-exact-short-decode.toml"
    done = imported(cli, CAPSULE, "--recipe", recipe)
    assert done["recipe"] == str(recipe) and done["imported"]["declared_by"] == {}


def test_allow_mismatch_needs_a_recipe(cli, store_home) -> None:
    r = cli("import", CAPSULE, "--allow-mismatch", "precision.kv_cache", "--reason", "x")
    assert r.exit_code == ExitCode.INVALID_INPUT and "--allow-mismatch needs --recipe" in r.stderr
