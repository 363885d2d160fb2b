"""`registry teacher set|show|import-lab` and `registry check` on real homes: real
git ledger, real index (SQLite and PostgreSQL), real keys, real sealed records whose
rows are the lab's real token ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from registry.formats.identity import ResolvedField, ResolvedIdentity, Status
from registry.formats.record import ContractInfo
from registry.formats.rundir import Bench, SuiteRef
from registry.formats.verdict import Verdict, VerdictStatus
from registry.store.index import open_index
from registry.store.ledger import folder_at
from registry.store.objects import ObjectStore
from registry.store.teachers import index_bindings, teachers
from tests.conftest import ROOT, resolved_identity
from tests.test_teacher import CAPSULE, capsule_rows

LANE = "tiny-bf16-exact"  # tiny-bf16-kv.toml's lane and teacher lane
SUITE_SHA = hashlib.sha256((ROOT / "recipes/suites/tiny-cold-v1.jsonl").read_bytes()).hexdigest()


def write_run(parent: Path, name: str, rows=None) -> Path:
    """A finished run directory whose rows are the lab's real rows (suite renamed)."""
    run = parent / name
    run.mkdir()
    (run / "server.log").write_text(f"INFO engine started ({name})\n")
    rows = [r.model_copy(update={"suite": "tiny-cold"}) for r in (rows or capsule_rows())]
    # `run` keeps two runs' bench objects apart, as their timings would in real runs
    bench = Bench(api="completions", model="tiny", params={"max_tokens": 128, "run": name},
                  suites=[SuiteRef(name="tiny-cold", sha256=SUITE_SHA, prompts=len(rows))],
                  rows=rows)
    (run / "bench.json").write_text(bench.model_dump_json(by_alias=True))
    (run / "status.json").write_text(json.dumps({"state": "complete"}))
    return run


def change_sealed_token(cli, home, rid: str, *, row: int, index: int) -> None:
    """Add one to a token id in the record's stored bench.json object."""
    statement = json.loads(cli("show", rid, "--json").stdout)["statement"]
    [subject] = [s for s in statement["subject"] if s["name"] == "bench.json"]
    path = ObjectStore(home.objects).path(subject["digest"]["sha256"])
    bench = json.loads(path.read_bytes())
    bench["rows"][row]["token_ids"][index] += 1
    path.chmod(0o644)
    path.write_text(json.dumps(bench))


def fp8_identity() -> ResolvedIdentity:
    base = resolved_identity(kv_cache="fp8_e4m3")
    scales = ResolvedField(resolved="calibrated (8 scalars from checkpoint)",
                           status=Status.undeclared)
    return base.model_copy(update={"fields": {**base.fields, "precision.kv_scales": scales}})


@pytest.fixture
def teacher_record(tmp_path, seal_run_dir, cli) -> str:
    rid = seal_run_dir(write_run(tmp_path, "teacher")).id
    r = cli("teacher", "set", rid[:12], "--lane", LANE, "--json")
    assert r.exit_code == 0, r.stderr
    return rid


def test_teacher_set_commits_indexes_and_shows(teacher_record, store_home, cli) -> None:
    shown = json.loads(cli("teacher", "show", LANE, "--json").stdout)
    assert shown["source"] == {"kind": "record", "ref": teacher_record, "files": {}}
    assert shown["axes"]["precision.kv_cache"] == "bfloat16"
    assert shown["axes"]["suite.sha256"] == SUITE_SHA
    assert len(shown["prompts"]) == 13
    ledger = store_home.ledger
    log = _git(ledger, "log", "--format=%H %s", "--", f"teachers/{LANE}.json")
    assert log == [f"{shown['ledger_commit']} teacher {LANE}: record {teacher_record[:16]}"]
    with open_index(store_home).engine.connect() as db:
        [row] = db.execute(select(teachers)).all()
    assert (row.lane, row.sha256, row.rows) == (LANE, shown["sha256"], 13)
    again = cli("teacher", "set", teacher_record, "--lane", LANE, "--json")
    assert json.loads(again.stdout)["ledger_commit"] == shown["ledger_commit"]  # no new commit
    assert index_bindings(store_home) == 1


def test_a_second_bf16_run_is_exact(teacher_record, tmp_path, seal_run_dir, cli) -> None:
    rid = seal_run_dir(write_run(tmp_path, "second")).id
    r = cli("check", rid[:12], "--json")
    assert r.exit_code == 0, r.stdout
    result = json.loads(r.stdout)
    assert result["verdict"]["status"] == "passed"
    assert result["verdict"]["rows_passed"] == 13
    assert "teacher of lane tiny-bf16-exact (record" in result["verdict"]["reference"]


def test_a_tampered_row_fails_though_its_stored_verdict_passed(
        teacher_record, tmp_path, seal_run_dir, cli, monkeypatch) -> None:
    rows = capsule_rows()
    ids = list(rows[5].token_ids)
    expected, ids[40] = ids[40], ids[40] + 1
    rows[5] = rows[5].model_copy(update={"token_ids": ids})
    forged = ContractInfo(name="bitwise-teacher", teacher=LANE,
                          verdict=Verdict(contract="bitwise-teacher",
                                          status=VerdictStatus.passed, reasons=[]))
    monkeypatch.setattr("registry.seal.contract_of", lambda *args: forged)
    rid = seal_run_dir(write_run(tmp_path, "tampered", rows)).id
    r = cli("check", rid, "--json")
    assert r.exit_code == 1
    result = json.loads(r.stdout)
    assert result["stored_verdict"]["status"] == "passed"
    assert result["problems"] == []  # signed as is: the rows themselves are wrong
    assert result["verdict"]["status"] == "failed"
    [bad] = [row for row in result["verdict"]["rows"] if not row["passed"]]
    assert bad["first_diff"] == {"index": 40, "expected": expected, "actual": expected + 1}
    human = cli("check", rid)
    assert "the record stored: passed; not used" in human.stdout
    assert "token ids differ at output index 40" in human.stdout


def test_rows_changed_after_sealing_fail(teacher_record, tmp_path, seal_run_dir, store_home,
                                         cli) -> None:
    sealed = seal_run_dir(write_run(tmp_path, "second")).id
    change_sealed_token(cli, store_home, sealed, row=2, index=7)
    result = json.loads(cli("check", sealed, "--json").stdout)
    assert result["exit_code"] == 1
    assert "bench.json no longer matches the digest the record signed" in result["problems"][0]
    assert result["verdict"]["rows"][2]["first_diff"]["index"] == 7


def test_an_fp8_record_relabelled_bf16_is_not_judged(teacher_record, tmp_path, seal_run_dir,
                                                    store_home, cli) -> None:
    """Editing the signed identity to pass as the teacher's precision is caught: the
    statement no longer hashes to the record id."""
    rid = seal_run_dir(write_run(tmp_path, "fp8"), fp8_identity()).id
    path = folder_at(store_home.ledger, rid) / "statement.json"
    statement = json.loads(path.read_bytes())
    fields = statement["predicate"]["identity"]["fields"]
    fields["precision.kv_cache"]["resolved"] = "bfloat16"
    fields["precision.kv_scales"]["resolved"] = "n/a"
    path.write_text(json.dumps(statement))
    r = cli("check", rid)
    assert r.exit_code == 1 and "statement no longer hashes to its id" in r.stderr
    assert "Traceback" not in r.stderr


def test_fp8_kv_run_is_refused_and_judged_otherwise(teacher_record, tmp_path, seal_run_dir,
                                                    cli) -> None:
    first = seal_run_dir(write_run(tmp_path, "fp8-a"), fp8_identity()).id
    second = seal_run_dir(write_run(tmp_path, "fp8-b"), fp8_identity()).id
    r = cli("check", first, "--json")
    assert r.exit_code == 6
    reasons = json.loads(r.stdout)["verdict"]["reasons"]
    assert reasons[0].startswith("precision.kv_cache bfloat16 vs fp8_e4m3: Never use BF16 token "
                                 "hashes as an expected FP8 bitwise gate")
    assert reasons[1].startswith("precision.kv_scales (none) vs calibrated")
    consistent = cli("check", first, "--contract", "self-consistency", "--against", second)
    assert consistent.exit_code == 0, consistent.stdout
    alone = cli("check", first, "--contract", "self-consistency")
    assert alone.exit_code == 6 and "needs 2 row sets" in alone.stdout


def test_no_teacher_refuses(tmp_path, seal_run_dir, cli) -> None:
    rid = seal_run_dir(write_run(tmp_path, "run")).id
    r = cli("check", rid)
    assert r.exit_code == 6
    assert "no teacher is set for this lane" in r.stdout


def test_a_warm_record_cannot_teach(tmp_path, seal_run_dir, cli) -> None:
    rows = capsule_rows()
    rows[3] = rows[3].model_copy(update={"cached_tokens": 16})
    rid = seal_run_dir(write_run(tmp_path, "warm", rows)).id
    r = cli("teacher", "set", rid, "--lane", LANE)
    assert r.exit_code == 6
    assert "rows [3] were not served cold" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_lane_and_record(store_home, cli) -> None:
    r = cli("teacher", "show", "nope")
    assert r.exit_code == 5 and "lane 'nope' has no teacher" in r.stderr
    assert cli("check", "abcdef").exit_code == 5


def test_import_lab_oracles_as_the_laguna_lane_teacher(store_home, cli) -> None:
    recipe = ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml"
    r = cli("teacher", "import-lab", CAPSULE, "--recipe", recipe, "--json")
    assert r.exit_code == 0, r.stderr
    binding = json.loads(r.stdout)
    assert binding["lane"] == "laguna-s21-exact-short-decode"
    assert binding["axes"] == {
        "precision.weights": "int4-w4a16", "precision.draft_weights": "fp8-w8a16",
        "precision.kv_cache": "bfloat16", "precision.kv_scales": "n/a",
        "model.revision": "4bbfc285f2f8b3b6b526274c133b7b17aae6c8cb",
        "precision.activations": None,  # a recipe's `activations` is the model dtype: unbound
        "suite.sha256": "9fdaacfdc4de59407a73cbe0d8130fa0f6abe91fed782e399a58adbc035ea638"}
    assert binding["source"]["kind"] == "lab-oracles"
    assert len(binding["prompts"]) == 13
    assert json.loads(cli("teacher", "show", binding["lane"], "--json").stdout) == binding


def test_import_lab_needs_concrete_axes(store_home, cli) -> None:
    recipe = ROOT / "recipes/laguna-s21-b70-long-context-service.toml"
    r = cli("teacher", "import-lab", CAPSULE, "--recipe", recipe)
    assert r.exit_code == 4
    missing = ("precision.kv_cache", "precision.kv_scales", "suite.sha256")  # all at once
    assert f"{', '.join(missing)} are not declared as one value" in r.stderr
    assert " ".join(f"--axis {axis}=VALUE" for axis in missing) in r.stderr
    bad = cli("teacher", "import-lab", CAPSULE, "--recipe", recipe, "--axis", "kv=fp8")
    assert bad.exit_code == 4 and "unknown binding axis 'kv'" in bad.stderr


def _git(repo: Path, *args: str) -> list[str]:
    import subprocess

    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                         check=True)
    return out.stdout.splitlines()


def test_check_and_show_never_import_torch_or_vllm(teacher_record, tmp_path, seal_run_dir,
                                                   store_home) -> None:
    import os
    import subprocess
    import sys

    rid = seal_run_dir(write_run(tmp_path, "second")).id
    code = (
        "import sys\n"
        "from registry.cli import app\n"
        f"for args in (['check', '{rid}', '--json'], ['teacher', 'show', '{LANE}']):\n"
        "    try:\n        app(args)\n    except SystemExit:\n        pass\n"
        "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm')))\n"
    )
    env = {**os.environ, "REGISTRY_HOME": str(store_home.root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert '"status": "passed"' in out.stdout
    assert "HEAVY []" in out.stdout


def test_a_teacher_must_verify_and_be_greedy(tmp_path, seal_run_dir, store_home, cli) -> None:
    from registry.recipe import load_recipe
    from registry.seal import seal_resolved

    tampered = seal_run_dir(write_run(tmp_path, "tampered")).id
    change_sealed_token(cli, store_home, tampered, row=0, index=0)
    r = cli("teacher", "set", tampered, "--lane", LANE)
    assert r.exit_code == 6 and f"record {tampered[:16]} does not verify" in r.stderr

    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    sampled = recipe.model_copy(update={"benchmark": recipe.benchmark.model_copy(
        update={"temperature": 0.7})})
    rid = seal_resolved(write_run(tmp_path, "sampled"), home=store_home,
                        identity=resolved_identity(), recipe=sampled).id
    r = cli("teacher", "set", rid, "--lane", LANE)
    assert r.exit_code == 6 and "is not a greedy run" in r.stderr
    assert cli("teacher", "show", LANE).exit_code == 5  # neither became the teacher


def test_a_teacher_file_edited_in_the_ledger_is_caught(teacher_record, tmp_path, seal_run_dir,
                                                       store_home, cli) -> None:
    """The committed teacher binding is signed: a later plain-git commit that moves its
    reference to fit another run is refused, its signature no longer verifying."""
    import base64

    rid = seal_run_dir(write_run(tmp_path, "second")).id
    assert cli("check", rid).exit_code == 0
    path = store_home.ledger / "teachers" / f"{LANE}.json"
    envelope = json.loads(path.read_bytes())
    teacher = json.loads(base64.b64decode(envelope["payload"]))
    teacher["rows"][3]["token_ids"][5] += 1
    envelope["payload"] = base64.b64encode(json.dumps(teacher).encode()).decode()
    path.write_text(json.dumps(envelope))
    _git(store_home.ledger, "commit", "-qam", "tweak the reference")
    r = cli("check", rid)
    assert r.exit_code == 1 and f"the teacher of lane {LANE}" in r.stderr and "invalid" in r.stderr
