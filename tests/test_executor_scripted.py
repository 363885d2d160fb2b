"""The executor with a scripted engine process (tests/scripted_engine.py): run, teardown
and failure paths, and the statistics on streams of a known shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from registry.errors import EngineFailed, VerificationFailed
from registry.executor.engine import Engine, EngineProcess
from registry.executor.run import Hooks, RunResult, run
from registry.formats import rundir
from registry.formats.rundir import LaunchPlan, RunStatus, read_model
from registry.recipe.schema import Recipe
from tests.conftest import ROOT

SCRIPT = ROOT / "tests/scripted_engine.py"


def scripted(scenario: dict) -> Callable[[LaunchPlan, Path], EngineProcess]:
    def launch(plan: LaunchPlan, log: Path) -> EngineProcess:
        argv = ["python", str(SCRIPT), "--port", str(plan.port), json.dumps(scenario)]
        return Engine(plan.model_copy(update={"argv": argv}), log)
    return launch


def go(tmp_path: Path, scenario: dict, prompts: int = 6, tokens: int = 120,
       hooks: Hooks | None = None) -> RunResult:
    (tmp_path / "model").mkdir(exist_ok=True)
    suite = "".join(json.dumps({"id": f"p{i}", "prompt": f"prompt {i}"}) + "\n"
                    for i in range(prompts))
    (tmp_path / "suite.jsonl").write_text(suite)
    recipe = Recipe.model_validate({
        "schema": "registry.recipe/v1", "name": "scripted", "lane": "scripted",
        "model": {"path": str(tmp_path / "model")},
        "precision": {"weights": "bfloat16", "kv_cache": "bfloat16"},
        "hardware": {"platform": "cpu"},
        "benchmark": {"max_tokens": tokens, "allow_prefix_reuse": False,
                      "suites": [{"name": "s", "path": "suite.jsonl"}]}})
    return run(recipe, tmp_path / "run", recipe_dir=tmp_path, timeout=60, request_timeout=30,
               launcher=scripted(scenario), hooks=hooks)


def status(tmp_path: Path) -> RunStatus:
    return read_model(tmp_path / "run" / rundir.STATUS, RunStatus)


def test_a_paced_stream_gives_its_rate_and_a_valid_measurement(tmp_path) -> None:
    result = go(tmp_path, {"gap_s": 0.004})
    q, m = result.quality["s"], result.metrics["s"]
    assert q.state == "valid" and q.burst == [] and q.used >= 5
    # 4 ms between tokens, plus the server's own write time: at most 250 tok/s
    assert 120 < m["decode_tok_s.median"].value < 250
    low, high = m["decode_tok_s.median"].ci_low, m["decode_tok_s.median"].ci_high
    assert low is not None and high is not None and low <= m["decode_tok_s.median"].value <= high
    assert m["itl_ms.p50"].value == pytest.approx(4, rel=0.5)
    assert status(tmp_path).state == "complete" and result.cleanup and result.cleanup.clean


def test_a_stream_written_in_one_burst_is_flagged(tmp_path) -> None:
    result = go(tmp_path, {"gap_s": 0.004, "per_write": 120}, prompts=3)
    result_paced = result.quality["s"]
    assert result_paced.state == "degraded"
    assert "decode_tok_s.median" not in result.metrics["s"]


def test_crlf_framing_end_to_end(tmp_path) -> None:
    result = go(tmp_path, {"gap_s": 0.002, "eol": "\r\n"}, prompts=2, tokens=20)
    assert result.rows == 2 and result.metrics["s"]["ttft_ms.p50"].count == 2


def test_an_engine_that_dies_mid_stream_fails_the_run_and_is_torn_down(tmp_path) -> None:
    with pytest.raises(EngineFailed):
        go(tmp_path, {"die_after": 5}, prompts=2)
    s = status(tmp_path)
    assert s.state == "failed" and s.reason and s.cleanup["port_closed"]
    assert s.cleanup["leftover_pids"] == []


def test_http_errors_fail_the_run_with_every_row_kept(tmp_path) -> None:
    with pytest.raises(VerificationFailed, match="2 of 2 requests failed"):
        go(tmp_path, {"status": 500}, prompts=2)
    bench = read_model(tmp_path / "run" / rundir.BENCH, rundir.Bench)
    assert [r.error[:8] for r in bench.rows] == ["HTTP 500"] * 2
    assert status(tmp_path).state == "failed"


def test_more_rounds_run_on_the_same_engine_and_stay_out_of_the_first_pass(tmp_path) -> None:
    seen: list[int] = []

    def more(rows: list) -> bool:
        seen.append(len(rows))
        return len(seen) < 3  # two more passes, then stop

    result = go(tmp_path, {"gap_s": 0.002}, prompts=3, tokens=20, hooks=Hooks(more=more))
    bench = read_model(tmp_path / "run" / rundir.BENCH, rundir.Bench)
    assert seen == [3, 6, 9] and result.rows == 3
    assert [r.round for r in bench.rows] == [0, 0, 0]
    assert [r.round for r in bench.more_rounds] == [1, 1, 1, 2, 2, 2]
    assert result.metrics["s"]["ttft_ms.p50"].count == 9  # speed figures: every pass


@pytest.mark.parametrize("kill", [True, False], ids=["kill-allowed", "kill-forbidden"])
def test_a_stop_is_term_a_grace_then_kill_only_where_the_policy_allows(
        tmp_path, monkeypatch, kill: bool) -> None:
    """A server that ignores SIGTERM: each step is recorded in status.json; without
    SIGKILL it is left running and reported (the run fails), its pid file kept for the
    next worker's reaping."""
    from registry.executor import engine, orphans

    pids = tmp_path / "pids"
    monkeypatch.setattr(engine, "HOST", engine.StopPolicy(
        grace_s=0.5, group_grace_s=0.5, kill=kill, pid_dir=pids))
    if kill:
        go(tmp_path, {"gap_s": 0.001, "ignore_term": True}, prompts=1, tokens=4)
    else:
        with pytest.raises(EngineFailed, match="teardown left the port open or processes"):
            go(tmp_path, {"gap_s": 0.001, "ignore_term": True}, prompts=1, tokens=4)
    cleanup = status(tmp_path).cleanup
    steps = [s["step"] for s in cleanup["steps"]]
    if kill:
        assert steps == ["TERM server", "TERM group", "KILL group"], cleanup
        assert cleanup["stopped_by"] == "KILL group" and cleanup["leftover_pids"] == []
        assert [s["gone"] for s in cleanup["steps"]] == [False, False, True]
        assert not list(pids.glob("engine-*.json"))
    else:
        assert steps == ["TERM server", "TERM group"] and cleanup["stopped_by"] == "left running"
        assert cleanup["leftover_pids"] == [cleanup["pid"]]
        assert list(pids.glob("engine-*.json"))  # kept: a person, or a reaper, decides
        assert orphans.reap(pids, grace_s=1) == []  # its owner (this process) is alive
        import os
        import signal

        os.killpg(cleanup["pid"], signal.SIGKILL)  # this test's own engine, by its pid
