"""`vllm bench serve --save-detailed` results as bench rows; figures as vLLM defines them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from registry.errors import InvalidInput
from registry.measure.metrics import suite_figures, suite_metrics
from registry.measure.vllm_bench import bench_from_result, import_result, read_result
from tests.conftest import ROOT

CAPTURED = ROOT / "tests/data/vllm-bench"


def shaped(n: int = 10, seed: int = 3) -> dict:
    """A result in vLLM's layout with its own (numpy) summary, as calculate_metrics makes it."""
    rng = random.Random(seed)
    ttfts = [rng.uniform(0.01, 0.05) for _ in range(n)]
    itls = [[rng.uniform(0.001, 0.004) for _ in range(31)] for _ in range(n)]
    lat = [t + sum(i) for t, i in zip(ttfts, itls, strict=True)]
    out = {"ttfts": ttfts, "itls": itls, "latencies": lat, "output_lens": [32] * n,
           "input_lens": [16] * n, "start_times": [100 + k * 0.2 for k in range(n)],
           "errors": [""] * n, "generated_texts": ["x"] * n, "model_id": "tiny"}
    tpots = [(lt - t) / 31 for lt, t in zip(lat, ttfts, strict=True)]
    pooled = [x for i in itls for x in i]
    for name, values in (("ttft", ttfts), ("tpot", tpots), ("itl", pooled), ("e2el", lat)):
        out[f"median_{name}_ms"] = float(np.median(values)) * 1000
        out[f"p99_{name}_ms"] = float(np.percentile(values, 99)) * 1000
    return out


def agree(data: dict, metrics: dict) -> None:
    for name in ("ttft", "tpot", "itl", "e2el"):
        assert metrics[f"{name}_ms.p50"].value == pytest.approx(data[f"median_{name}_ms"],
                                                               rel=1e-6)
        assert metrics[f"{name}_ms.p99"].value == pytest.approx(data[f"p99_{name}_ms"], rel=1e-6)


def test_figures_follow_vllm_definitions() -> None:
    data = shaped()
    bench = bench_from_result(data, "s")
    agree(data, suite_metrics(bench.rows, window=20))
    assert len(bench.rows[0].chunk_times_s) == 32 and bench.rows[0].completion_tokens == 32


def test_failed_requests_are_rows_with_their_error() -> None:
    data = shaped(4)
    data["errors"][2] = "Bad Request"
    rows = bench_from_result(data, "s").rows
    assert rows[2].error == "Bad Request" and rows[2].chunk_times_s == []


def test_missing_detail_and_bad_files(tmp_path: Path) -> None:
    data = shaped(3)
    del data["itls"]
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match="--save-detailed"):
        read_result(tmp_path / "r.json")
    (tmp_path / "bad.json").write_text("[1")
    with pytest.raises(InvalidInput, match="not a readable JSON"):
        read_result(tmp_path / "bad.json")


def test_import_writes_a_run_directory(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text(json.dumps(shaped(3)))
    (tmp_path / "serve.log").write_text("INFO vllm\n")
    import_result(tmp_path / "r.json", tmp_path / "serve.log", tmp_path / "run")
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert names == ["bench.json", "server.log", "status.json", "vllm-bench-result.json"]
    with pytest.raises(InvalidInput, match="not empty"):
        import_result(tmp_path / "r.json", tmp_path / "serve.log", tmp_path / "run")


def _captured_summary() -> dict[str, float]:
    """vLLM's printed summary lines (`Median TTFT (ms): 12.34`) as name -> value."""
    out = {}
    for line in (CAPTURED / "summary.txt").read_text().splitlines():
        label, colon, value = line.rpartition(":")
        if colon and label.split()[0] in ("Median", "P99"):
            stat, metric = label.split()[:2]
            out[f"{stat.lower()}_{metric.lower()}_ms"] = float(value)
    return out


def test_a_real_vllm_bench_result_agrees_with_its_summary(tmp_path: Path) -> None:
    data = read_result(CAPTURED / "result.json")
    metrics = suite_metrics(bench_from_result(data, "s").rows, window=20)
    agree(data, metrics)  # the saved summary: full precision
    printed = _captured_summary()  # the printed one: two decimals
    for key, value in printed.items():
        stat, name = key.split("_", 1)
        figure = metrics[f"{name.removesuffix('_ms')}_ms.{'p50' if stat == 'median' else 'p99'}"]
        assert figure.value == pytest.approx(value, abs=0.006)
    assert len(printed) == 8
    quality = suite_figures(bench_from_result(data, "s").rows, window=20).quality
    assert quality.degraded and quality.burst  # vLLM's client read many chunks at once too
