"""Quality contracts on real vLLM CPU runs of the tiny model, sealed into a real home:
a BF16-KV teacher, a second BF16-KV run held exact to it, a checkpoint-FP8-KV run
refused by that teacher and judged by self-consistency and semantic gates instead,
and a tampered row that fails although a stored summary says it passed."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from registry.formats import rundir
from registry.formats.rundir import Bench, read_model
from tests.conftest import ROOT

pytestmark = [pytest.mark.engine, pytest.mark.parametrize("database_url", ["sqlite"],
                                                          indirect=True)]
BF16_LANE = "tiny-bf16-exact"


@pytest.fixture(scope="module")
def second_checkpoint_kv_run(tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny-checkpoint-kv once more, on a freshly started server (self-consistency)."""
    from registry.executor.run import run_recipe

    out = tmp_path_factory.mktemp("contracts") / "tiny-checkpoint-kv-again"
    run_recipe(ROOT / "recipes/tiny-checkpoint-kv.toml", out, models_dir=tiny_models,
               timeout=900, request_timeout=300)
    return out


def seal(cli, run_dir: Path) -> str:
    r = cli("seal", run_dir, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["id"]


def check(cli, rid: str, *args: str) -> tuple[int, dict]:
    r = cli("check", rid, *args, "--json")
    return r.exit_code, json.loads(r.stdout)


@pytest.fixture
def bf16_teacher(cli, store_home, cpu_run) -> str:
    rid = seal(cli, cpu_run("tiny-bf16-kv"))
    r = cli("teacher", "set", rid, "--lane", BF16_LANE, "--json")
    assert r.exit_code == 0, r.stderr
    axes = json.loads(r.stdout)["axes"]
    assert (axes["precision.kv_cache"], axes["precision.kv_scales"]) == ("bfloat16", "n/a")
    return rid


def test_a_second_bf16_kv_run_is_exact(cli, bf16_teacher, cpu_run) -> None:
    code, result = check(cli, bf16_teacher)
    assert code == 0 and result["verdict"]["status"] == "passed"
    # Another fresh server with an explicit BF16 cache, on the same weights (the checkpoint
    # that also carries an FP8 kv_cache_scheme, overridden): its lane takes the same teacher.
    second = seal(cli, cpu_run("tiny-checkpoint-kv-bf16"))
    assert cli("teacher", "set", bf16_teacher, "--lane", "tiny-checkpoint-kv-bf16").exit_code == 0
    code, result = check(cli, second, "--contract", "bitwise-teacher")
    verdict = result["verdict"]
    assert code == 0, verdict["reasons"]
    rows = read_model(cpu_run("tiny-checkpoint-kv-bf16") / rundir.BENCH, Bench).rows
    assert verdict["rows_passed"] == verdict["rows_total"] == len(rows) == 8
    assert all(r["checks"]["cached_zero"] for r in verdict["rows"])
    assert {c["name"]: c["passed"] for c in verdict["checks"]} == {
        "all rows exact": True, "longest prompt exact": True,
        "long response then next exact": True}


def test_checkpoint_fp8_kv_is_refused_and_judged_by_its_own_contracts(
        cli, bf16_teacher, cpu_run, second_checkpoint_kv_run) -> None:
    fp8 = seal(cli, cpu_run("tiny-checkpoint-kv"))
    # The lab's mistake, made on purpose: the BF16 teacher as the FP8 lane's reference.
    assert cli("teacher", "set", bf16_teacher, "--lane", "tiny-checkpoint-kv").exit_code == 0
    code, result = check(cli, fp8, "--contract", "bitwise-teacher")
    assert code == 6 and result["verdict"]["status"] == "refused"
    reasons = result["verdict"]["reasons"]
    assert reasons[0].startswith("precision.kv_cache bfloat16 vs fp8_e4m3: Never use BF16 token "
                                 "hashes as an expected FP8 bitwise gate")
    assert reasons[1].startswith("precision.kv_scales n/a vs calibrated")
    assert result["verdict"]["rows"] == []  # refused: no row was compared

    again = seal(cli, second_checkpoint_kv_run)
    code, result = check(cli, fp8, "--contract", "self-consistency", "--against", again)
    assert code == 0, result["verdict"]["reasons"]
    assert result["verdict"]["rows_passed"] == 8

    code, result = check(cli, fp8)  # the recipe's own contract: semantic gates
    verdict = result["verdict"]
    assert verdict["contract"] == "semantic-gates"
    assert [r["gate"] for r in verdict["rows"]] == ["no-repetition[0]"] * 8
    # Re-derived from the raw rows with a plain count: a 16-token span seen > 6 times fails.
    rows = read_model(cpu_run("tiny-checkpoint-kv") / rundir.BENCH, Bench).rows
    looping = [max(Counter(tuple(r.token_ids[i:i + 16])
                           for i in range(len(r.token_ids) - 15)).values(), default=0) > 6
               for r in rows]
    assert [not r["passed"] for r in verdict["rows"]] == looping
    assert verdict["status"] == ("failed" if any(looping) else "passed")
    assert code == (1 if any(looping) else 0)


def test_a_tampered_row_fails_though_a_stored_summary_says_passed(
        cli, bf16_teacher, cpu_run, tmp_path) -> None:
    run = shutil.copytree(cpu_run("tiny-bf16-kv"), tmp_path / "tampered")
    bench = json.loads((run / rundir.BENCH).read_text())
    original = bench["rows"][3]["token_ids"][5]
    bench["rows"][3]["token_ids"][5] = original + 1
    (run / rundir.BENCH).write_text(json.dumps(bench))
    # what the lab's tools stored beside their rows, and later tools trusted
    (run / "exactness.json").write_text(json.dumps({"all_exact": True, "exact_count": 8}))
    rid = seal(cli, run)
    shown = json.loads(cli("show", rid, "--json").stdout)
    assert "exactness.json" in {s["name"] for s in shown["statement"]["subject"]}
    assert cli("verify", rid).exit_code == 0  # signed as it is: the rows themselves are wrong
    code, result = check(cli, rid)
    assert code == 1 and result["verdict"]["status"] == "failed"
    [bad] = [r for r in result["verdict"]["rows"] if not r["passed"]]
    assert bad["index"] == 3
    assert bad["first_diff"] == {"index": 5, "expected": original, "actual": original + 1}
    assert bad["checks"]["text_sha256_equal"]  # the text was left alone: ids alone catch it
