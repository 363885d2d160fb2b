"""Row quality, figures and intervals, on captured real runs and on shaped streams."""

from __future__ import annotations

import json

import numpy as np
import pytest

from registry.formats.figures import RowFlag
from registry.formats.rundir import Bench, BenchRow
from registry.measure.interval import bootstrap, percentile
from registry.measure.metrics import decode_rate, suite_figures
from registry.measure.quality import assess
from registry.recipe.schema import MetricFormula
from tests.conftest import ROOT
from tests.test_metrics import _capsule_rows

CAPTURED = ROOT / "tests/data/cpu-runs"
LANES = ["tiny-bf16-kv", "tiny-checkpoint-kv", "tiny-checkpoint-kv-bf16", "tiny-fp8-kv",
         "tiny-hybrid-sliding", "tiny-ngram"]
# The tiny model's paced rows on the capture host decode at ~700 tok/s; a figure above
# this bound on that 2-core CPU can only come from a burst.
PHYSICAL_TOK_S = 2000


def captured(lane: str) -> list[BenchRow]:
    return Bench.model_validate(json.loads((CAPTURED / lane / "bench.json").read_text())).rows


def row(index: int, times: list[float], started: float | None = None) -> BenchRow:
    return BenchRow(suite="s", index=index, prompt_id=f"p{index}", prompt_sha256="0" * 64,
                    token_ids=list(range(len(times))), token_times_s=times,
                    completion_tokens=len(times), request_started_epoch_s=started)


def paced(index: int, step: float = 0.002, n: int = 128, first: float = 0.02,
          width: int = 1) -> BenchRow:
    """`width` tokens arrive together every `step` seconds (speculative decoding)."""
    return row(index, [first + (i // width) * step for i in range(n)], started=float(index))


@pytest.mark.parametrize("lane", LANES)
def test_captured_runs_report_bursts_and_no_unflagged_figure_above_the_host(lane) -> None:
    rows = captured(lane)
    figures = suite_figures(rows)
    rates = [decode_rate(r.token_times_s, MetricFormula.intervals_99) or 0 for r in rows]
    bursts = {r.index for r, rate in zip(rows, rates, strict=True) if rate > PHYSICAL_TOK_S}
    assert bursts <= set(figures.quality.burst)  # every impossible row is caught
    assert figures.quality.degraded and "arrived in bursts" in figures.quality.reasons[0]
    decode = figures.metrics.get("decode_tok_s.median")
    assert decode is None or decode.value < PHYSICAL_TOK_S


def test_the_checkpoint_run_of_the_issue_flags_its_84000_tok_s_rows() -> None:
    rows = captured("tiny-checkpoint-kv-bf16")
    rates = [round(decode_rate(r.token_times_s, MetricFormula.intervals_99) or 0) for r in rows]
    assert rates[:4] == [336, 84821, 8556, 85185]
    assert assess(rows, 100).burst == list(range(8))


def test_paced_fp8_rows_are_kept_and_warm_up_row_is_flagged() -> None:
    q = assess(captured("tiny-fp8-kv"), 100)
    assert q.burst == [1, 2, 7] and q.warmup == [0] and q.used == 4
    assert q.pace is not None and 1 / q.pace.step_s * q.pace.width > 500  # ~1 ms steps


def test_the_b70_capsule_is_valid_with_speculative_widths() -> None:
    q = assess(_capsule_rows(), 100)
    assert q.state == "valid" and q.used == 13 and q.pace is not None and q.pace.width > 1


def test_a_burst_row_among_paced_rows() -> None:
    rows = [paced(i) for i in range(6)]
    burst = row(6, [0.25] * 3 + [0.25 + 1e-5 * i for i in range(125)], started=6.0)
    q = assess([*rows, burst], 100)
    assert q.burst == [6] and q.used == 6 and q.state == "degraded"
    figures = suite_figures([*rows, burst])
    assert figures.metrics["decode_tok_s.median"].value == pytest.approx(500)
    assert figures.metrics["decode_tok_s.median"].count == 6


def test_speculative_widths_and_a_2x_faster_row_are_not_bursts() -> None:
    rows = [paced(i, step=0.03, width=4) for i in range(5)] + [paced(5, step=0.015, width=4)]
    q = assess(rows, 100)
    assert q.state == "valid" and q.burst == []


def test_one_read_of_many_tokens_after_a_short_gap_is_a_burst() -> None:
    rows = [paced(i) for i in range(5)]
    late = row(5, [0.02 + 0.002 * i for i in range(20)] + [0.06] * 108, started=5.0)
    assert assess([*rows, late], 100).burst == [5]


def test_warm_up_and_too_few_rows() -> None:
    rows = [paced(0, first=0.5)] + [paced(i) for i in range(1, 4)]
    q = assess(rows, 100)
    assert q.warmup == [0] and RowFlag.warmup in q.rows[0].flags
    assert q.state == "degraded" and "fewer than 5" in q.reasons[0]


def test_short_and_failed_rows_are_left_out() -> None:
    rows = [paced(i) for i in range(5)] + [paced(5, n=50)]
    rows.append(rows[0].model_copy(update={"index": 6, "error": "HTTP 500"}))
    q = assess(rows, 100)
    assert [f.value for f in q.rows[5].flags] == ["short"] and q.rows[6].flags == ["error"]
    assert q.used == 5


# ---- figures and intervals ----

def test_vllm_distribution_figures_match_numpy() -> None:
    rows = captured("tiny-fp8-kv")
    m = suite_figures(rows).metrics
    ttft = [r.chunk_times_s[0] * 1000 for r in rows]
    itl = [1000 * (b - a) for r in rows for a, b in zip(r.chunk_times_s, r.chunk_times_s[1:],
                                                           strict=False)]
    tpot = [1000 * (r.chunk_times_s[-1] - r.chunk_times_s[0]) / 127 for r in rows]
    for name, values in (("ttft_ms", ttft), ("itl_ms", itl), ("tpot_ms", tpot)):
        for p in (50, 90, 99):
            assert m[f"{name}.p{p}"].value == pytest.approx(np.percentile(values, p), rel=1e-12)
        assert m[f"{name}.mean"].value == pytest.approx(np.mean(values), rel=1e-12)
    assert m["itl_ms.p50"].count == len(itl)
    wall = max(r.request_started_epoch_s + r.chunk_times_s[-1] for r in rows) - min(
        r.request_started_epoch_s for r in rows)
    assert m["output_throughput_tok_s"].value == pytest.approx(8 * 128 / wall)


def test_percentile_is_numpy_linear() -> None:
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
    for p in (0, 10, 50, 90, 99, 100):
        assert percentile(values, p) == pytest.approx(np.percentile(values, p))


def test_bootstrap_is_seeded_and_brackets_the_figure() -> None:
    rows = _capsule_rows()
    m = suite_figures(rows).metrics["decode_tok_s.median"]
    again = suite_figures(rows).metrics["decode_tok_s.median"]
    assert (m.ci_low, m.ci_high) == (again.ci_low, again.ci_high)
    assert m.ci_low is not None and m.ci_high is not None
    assert m.ci_low <= m.value <= m.ci_high and m.ci_high - m.ci_low > 1
    assert bootstrap([1.0]) is None


def test_pooled_bootstrap_equals_pooling_each_resample() -> None:
    from registry.measure.interval import RESAMPLES, SEED, bootstrap_pooled

    rng = np.random.default_rng(7)
    groups = [list(rng.exponential(2.0, size=int(rng.integers(1, 30)))) for _ in range(9)]
    draws = np.random.default_rng(SEED).integers(0, 9, size=(RESAMPLES, 9))
    naive = [np.percentile(np.concatenate([groups[j] for j in d]), 50) for d in draws]
    expected = np.percentile(naive, [2.5, 97.5])
    assert bootstrap_pooled(groups) == pytest.approx(tuple(expected), rel=1e-12)


def test_capsule_itl_is_per_arrival_without_chunk_times() -> None:
    m = suite_figures(_capsule_rows()).metrics
    assert m["itl_ms.p50"].value > 20  # a speculative step every ~30 ms, not 0 within one
    assert m["itl_ms.p50"].ci_low is not None


def test_interval_narrows_with_more_rows() -> None:
    import random

    rng = random.Random(1)
    few = [rng.gauss(100, 10) for _ in range(8)]
    many = few + [rng.gauss(100, 10) for _ in range(120)]

    def width(xs: list[float]) -> float:
        ci = bootstrap(xs)
        assert ci is not None
        return ci[1] - ci[0]

    assert width(many) < width(few) / 2


def test_seal_of_a_captured_run_reports_its_burst_rows(cli, store_home) -> None:
    r = cli("seal", CAPTURED / "tiny-checkpoint-kv-bf16")
    assert r.exit_code == 0, r.stderr
    assert "tiny-cold: measurement degraded, 0 of 8 rows in decode figures; burst rows " \
           "0,1,2,3,4,5,6,7" in r.stdout
    shown = cli("show", r.stdout.split()[0][:12])
    assert "measurement degraded" in shown.stdout
    listed = json.loads(cli("list", "--json").stdout)
    assert listed[0]["quality"] == "degraded"


def test_diff_flags_degraded_figures_and_says_whether_a_delta_is_noise(cli, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    a, b = CAPTURED / "tiny-fp8-kv", CAPTURED / "tiny-bf16-kv"
    shown = cli("diff", a, b)
    assert shown.exit_code == 0, shown.stderr
    # each side's quality heads its suite's figures (a flag never cut from a number)
    assert "  tiny-cold: a degraded, b degraded" in shown.stdout
    assert "~ within noise" in shown.stdout
    d = json.loads(cli("diff", a, b, "--json").stdout)
    ttft = next(m for m in d["metrics"] if m["name"] == "ttft_ms.p50")
    assert ttft["quality_a"] == ttft["quality_b"] == "degraded"
    assert ttft["beyond_noise"] in (True, False)
    decode = next(m for m in d["metrics"] if m["name"] == "decode_tok_s.median")
    assert decode.get("b") is None and not decode["comparable"]  # bf16: no unflagged row
