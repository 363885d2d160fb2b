"""The GPU job's helpers without a GPU: the client-agreement figures and interval, and
the side-by-side figures of a work folder, and whether a job ran on the machine."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))
sys.path.insert(0, str(ROOT / "tools" / "gpu"))
import client_agreement as agreement
import figures


def spans(rate: float, n: int = 80, seed: int = 0) -> list[float]:
    """Seconds for 99 intervals at about `rate` tokens/s, with 2% noise."""
    rng = random.Random(seed)
    return [99 / (rate * rng.gauss(1, 0.02)) for _ in range(n)]


def named(rows) -> dict[str, float]:
    return {name: value for name, value, _ in rows}


def test_agreeing_clients_give_a_ratio_near_one_with_one_inside_the_interval() -> None:
    same = spans(300, seed=1)
    got = named(agreement.figures({"client": same, "peer": list(same),
                                   "peer_tpot_ms": [1000 / 300] * 10}))
    assert got["client_vs_peer_ratio"] == 1
    assert 0.99 < got["ratio_ci95_low"] <= 1 <= got["ratio_ci95_high"] < 1.01
    assert got["rounds"] == 10 and got["bursts_client"] == 0
    other = named(agreement.figures({"client": same, "peer": spans(300, seed=2),
                                     "peer_tpot_ms": [1000 / 300]}))
    assert abs(other["client_vs_peer_ratio"] - 1) < 0.02  # two samples of one rate


def test_a_five_percent_gap_is_outside_the_interval() -> None:
    got = named(agreement.figures({"client": spans(285, seed=1), "peer": spans(300, seed=2),
                                   "peer_tpot_ms": [1000 / 300] * 10}))
    assert got["ratio_ci95_high"] < 1 and 0.93 < got["client_vs_peer_ratio"] < 0.97


def test_the_interval_is_reproducible_and_bursts_are_left_out() -> None:
    ours, peers = spans(300, seed=3), spans(300, seed=4)
    first = named(agreement.figures({"client": ours, "peer": peers, "peer_tpot_ms": [3.3]}))
    again = named(agreement.figures({"client": ours, "peer": peers, "peer_tpot_ms": [3.3]}))
    assert first["ratio_ci95_low"] == again["ratio_ci95_low"]  # seeded
    got = named(agreement.figures({"client": [*ours, 0.001], "peer": peers,
                                   "peer_tpot_ms": [3.3]}))
    assert got["bursts_client"] == 1 and got["client_decode_tok_s"] < 1000


def test_figures_put_the_engine_lines_beside_the_resolved_fields(tmp_path, cli, capsys) -> None:
    run = tmp_path / "runs" / "checkpoint-fp8"
    shutil.copytree(ROOT / "tests" / "data" / "cpu-runs" / "tiny-checkpoint-kv", run)
    (tmp_path / "logs").mkdir()
    resolved = cli("resolve", run, "--json").stdout
    (tmp_path / "logs" / "resolve-checkpoint-fp8.json").write_text(resolved)
    (tmp_path / "logs" / "reproduce-2.log").write_text(
        "== reproduce\n" + json.dumps({"identity": {"passed": True}, "performance": {
            "passed": False, "status": "inconclusive", "rounds": 5, "max_rounds": 5,
            "suites": [{"suite": "tiny-cold", "ratio": 0.91, "rows": [1]}]}}))
    figures.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "engine   CPU KV cache size: 3,379,456 tokens" in out
    assert "registry kv.capacity_tokens = 3379456" in out
    assert "reproduce-2: identity=pass performance=inconclusive rounds=5/5" in out
    assert '{"suite": "tiny-cold", "ratio": 0.91}' in out


def test_the_job_says_whether_it_ran_on_this_machine(tmp_path) -> None:
    """A collect after a lost lease must not wait on a bare machine (docs/gpu.md)."""
    job = ["bash", str(ROOT / "tools/gpu/device-job.sh"), "--started"]
    env = {"PATH": os.environ["PATH"], "KIT_WORK": str(tmp_path)}
    bare = subprocess.run(job, env=env, capture_output=True, text=True)
    assert bare.returncode == 3 and "the lease was lost" in bare.stdout
    (tmp_path / "pipeline.log").write_text("")
    assert subprocess.run(job, env=env, capture_output=True).returncode == 0
