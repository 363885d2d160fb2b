"""Sequential starts (registry/measure/sequential.py), checked by simulation from the kept
H200 starts (tests/data/gpu-runs/): seeded resampling of their start-to-start residuals,
no engine. The numbers the tests print are the ones docs/measurement.md ("Sequential
starts") quotes; run with `-s` to see them."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from functools import cache

import pytest

from registry.errors import InvalidInput
from registry.measure.sequential import (
    Looks,
    PairedInterval,
    looks,
    simulate,
    starts_needed,
    stop_reason,
)
from registry.measure.starts import boost_verdict
from tests.test_disturbance import kept

NOMINAL = 0.05  # the overall level's error: 1 - LEVEL
# the leases (87 starts, up to 2026-12-02) the numbers in docs/measurement.md were
# simulated from; later captures are judged, not resampled
SIMULATED_FROM = ("h200x1-20261130", "h200x1-20261201", "h200x1-20261201-eager",
                  "h200x1-20261201-second", "h200x1-20261202-controlled",
                  "h200x1-20261202-controlled-2", "h200x2-20261130", "h200x2-20261130-followup")
TRIALS = 1000
QUIET_SD = 0.01  # a lease whose undisturbed starts spread less than this is quiet


@cache
def lease_logs() -> dict[tuple[str, str], tuple[float, ...]]:
    """ln figure of every undisturbed kept start, by (lease, lane): the rule keeps the
    disturbed ones out of every verdict, so they are not what a verdict resamples."""
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run, lane, _, e in kept():
        if e.figure and not e.disturbed and run.split("/")[0] in SIMULATED_FROM:
            groups[(run.split("/")[0], lane)].append(math.log(e.figure))
    return {k: tuple(v) for k, v in groups.items() if len(v) >= 3}


def residuals(quiet: bool | None = None) -> list[float]:
    """Each lease's ln figures less their mean; `quiet` picks the quiet leases (True),
    the others (False) or all (None)."""
    out = []
    for v in lease_logs().values():
        if quiet is None or (statistics.stdev(v) < QUIET_SD) == quiet:
            m = statistics.fmean(v)
            out += [x - m for x in v]
    return out


def ab_rule(iv: PairedInterval | None) -> str | None:
    verdict = boost_verdict(iv, 2.0)
    return None if verdict == "inconclusive" else verdict


def reproduce_rule(iv: PairedInterval | None) -> str | None:
    if iv is None or iv.low is None or iv.high is None:
        return None
    return "passed" if iv.low >= 0.95 else "failed" if iv.high < 0.95 else None


def rate(decisions: dict[str, int], wrong: set[str]) -> float:
    return sum(n for k, n in decisions.items() if k in wrong) / sum(decisions.values())


SEQUENTIAL = looks(2, 10, None)


@pytest.mark.parametrize("pool", [True, None], ids=["quiet-leases", "all-leases"])
def test_sequential_ab_decides_falsely_at_most_at_the_nominal_level(pool) -> None:
    r = residuals(pool)
    same = simulate(r, 0.0, SEQUENTIAL, ab_rule, trials=TRIALS, seed=1, paired=False)
    four = simulate(r, math.log(1.04), SEQUENTIAL, ab_rule, trials=TRIALS, seed=2,
                    paired=False)
    false_same = rate(same.decisions, {"faster", "slower"})
    false_four = rate(four.decisions, {"slower", "no difference"})
    print(f"\nab {pool}: sd {statistics.stdev(r):.4f}; no change {same.decisions} "
          f"mean {same.mean_starts:.2f}; +4% {four.decisions} mean {four.mean_starts:.2f}")
    assert false_same <= NOMINAL and false_four <= NOMINAL
    if pool:  # quiet: a real 4% is found, early
        assert four.decisions.get("faster", 0) >= 0.9 * TRIALS and four.mean_starts < 4


def test_sequential_reproduction_decides_falsely_at_most_at_the_nominal_level() -> None:
    """Against sealed records of three starts each: the same speed never fails more often
    than the level allows, a 10% slowdown never passes more often."""
    r = residuals()
    same = simulate(r, 0.0, SEQUENTIAL, reproduce_rule, trials=TRIALS, seed=3, paired=False,
                    sealed_starts=3)
    slow = simulate(r, math.log(0.90), SEQUENTIAL, reproduce_rule, trials=TRIALS, seed=4,
                    paired=False, sealed_starts=3)
    print(f"\nreproduce: same {same.decisions} mean {same.mean_starts:.2f}; "
          f"0.90 {slow.decisions} mean {slow.mean_starts:.2f}")
    assert rate(same.decisions, {"failed"}) <= NOMINAL
    assert rate(slow.decisions, {"passed"}) <= NOMINAL


class EveryLookAt95(Looks):
    """The naive rule the spending replaces: 95% at every look."""

    @property
    def each(self) -> float:
        return self.level


def test_looking_at_95_percent_every_time_would_decide_falsely_too_often() -> None:
    r = residuals()
    naive = simulate(r, 0.0, EveryLookAt95(first=2, most=10), ab_rule, trials=TRIALS, seed=1,
                     paired=False)
    print(f"\nnaive: {naive.decisions}")
    assert rate(naive.decisions, {"faster", "slower"}) > 2 * NOMINAL


def test_independent_starts_decide_more_than_pairs_at_the_same_starts() -> None:
    """Adjacent kept starts are not correlated, so pairing them cancels nothing and halves
    the degrees of freedom: the same starts, analysed as independent, decide a real 4%
    more often, and sooner."""
    r, effect = residuals(), math.log(1.04)
    fixed = looks(3, 3, None)
    pairs, alone = (simulate(r, effect, fixed, ab_rule, trials=TRIALS, seed=5, paired=p)
                    for p in (True, False))
    seq_pairs, seq_alone = (simulate(r, effect, SEQUENTIAL, ab_rule, trials=TRIALS, seed=6,
                                     paired=p) for p in (True, False))
    print(f"\n3 a side: pairs {pairs.decisions}, independent {alone.decisions}; sequential: "
          f"pairs {seq_pairs.decisions} mean {seq_pairs.mean_starts:.2f}, independent "
          f"{seq_alone.decisions} mean {seq_alone.mean_starts:.2f}")
    assert alone.decisions.get("faster", 0) > 1.3 * pairs.decisions.get("faster", 0)
    assert seq_alone.mean_starts < seq_pairs.mean_starts


def test_starts_needed_is_re_derived_from_the_kept_leases() -> None:
    """docs/measurement.md's formula on each lease's kept spread: a quiet lease decides a
    4% difference within 3 starts a side, a disturbed one needs over 10; and it is the
    interval's own arithmetic: at N the half-width fits the margin, at N - 1 it does not."""
    from registry.measure.sequential import independent_interval

    margin = math.log(1.04)
    needs = {}
    for key, v in lease_logs().items():
        sd = statistics.stdev(v)
        n = starts_needed(sd, margin, paired=False)
        needs[key] = n
        assert n is not None
        for k, fits in ((n, True), (n - 1, False)):
            if k < 2:
                continue
            a = _spread_exactly(sd, k)  # k starts a side spreading exactly as the lease's
            iv = independent_interval(a, a, level=0.95)
            assert iv is not None and iv.high is not None
            assert (math.log(iv.high) <= margin + 1e-12) == fits, (key, k)
    quiet = [n for k, n in needs.items() if statistics.stdev(lease_logs()[k]) < QUIET_SD]
    print(f"\nstarts needed for 4%: {needs}")
    assert quiet and max(quiet) <= 3 and max(n or 0 for n in needs.values()) > 10


def _spread_exactly(sd: float, k: int) -> list[float]:
    """k values whose sample sd is exactly sd (mean 0)."""
    base = [i - (k - 1) / 2 for i in range(k)]
    s = statistics.stdev(base)
    return [sd * x / s for x in base]


def test_stop_reasons_and_bad_plans() -> None:
    plan = looks(2, 4, 30)
    assert plan.count == 3 and plan.each == pytest.approx(1 - 0.05 / 3)
    assert looks(3, None, None).each == pytest.approx(0.95)  # one look: the fixed design
    assert stop_reason(False, 3, looks(3, None, None), 0) == "the planned 3 starts a side ran"
    assert stop_reason(True, 1, plan, 0) is None  # before the first look
    assert stop_reason(True, 2, plan, 0) == "decided after 2 starts a side"
    assert stop_reason(False, 3, plan, 0) is None
    assert "most starts spent" in (stop_reason(False, 4, plan, 0) or "")
    assert "budget spent" in (stop_reason(False, 3, plan, 31 * 60) or "")
    with pytest.raises(InvalidInput, match="fewer than --starts"):
        looks(3, 2, None)
    with pytest.raises(InvalidInput, match="more than 0"):
        looks(2, 4, 0)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_dry_run_plans_the_looks_from_the_sealed_spread(store_home, tmp_path, cli) -> None:
    """The compiled 3 B record and its control of the first controlled H200 lease: one look
    at 2 a side foresees 3 a side for a ratio of 1.0 (tests/test_gpu_runs.py); a plan of up
    to 6 looks each at a stricter level foresees no fewer, and says where it looks."""
    import json
    import shutil

    from registry.seal import seal_run
    from tests.test_disturbance import RUNS

    host = RUNS / "h200x1-20261202-controlled"
    ids = {name: seal_run(shutil.copytree(host / "runs" / name, tmp_path / name),
                          home=store_home).id for name in ("record", "control")}
    args = ["reproduce", ids["record"], "--control", ids["control"], "--dry-run",
            "--models", tmp_path / "models", "--max-starts", "6"]
    r = cli(*args, "--json")
    assert r.exit_code in (0, 6), r.stderr  # drift: this host is not the H200
    shown = json.loads(r.stdout)
    assert shown["looks"]["first"] == 2 and shown["looks"]["most"] == 6
    [seen] = shown["foreseen"]
    assert seen["starts_for_parity"] >= 3
    text = " ".join(cli(*args).stdout.split())
    assert "first look after 2 starts a side, then after each pair up to 6" in text
    assert "each look at 99% (the error spread over 5 looks)" in text
    bad = cli(*args[:-1], "1")
    assert bad.exit_code == 4 and "fewer than --starts" in bad.stderr


def test_the_kept_h200_ab_is_re_derived_with_why() -> None:
    """The BF16-KV against FP8-KV A/B of the 3 B lanes on one H200 (2026-12-03, 4 starts a
    side, signed `slower` over pairs): over independent starts, any start the rule marks
    kept out and named, it is still slower, and its reason names the starts it used."""
    import json

    from registry.executor import gpu
    from registry.formats.rundir import Bench
    from registry.measure.disturbance import record_evidence
    from registry.measure.starts import StartFigure, start_figure
    from registry.recipe.schema import MetricFormula
    from registry.reproduce.why import explain_boost
    from tests.test_disturbance import RUNS, _own_samples

    host = RUNS / "h200x1-20261203-ab"
    there = json.loads((host / "logs" / "ab-kv.log").read_text())
    lease = gpu.parse((host / "logs" / "smi.csv").read_text())
    figures, evidence = [], []
    for i, run in enumerate(sorted((host / "runs" / "ab").iterdir())):
        recipe = json.loads((run / "recipe.json").read_text())
        formula = MetricFormula(recipe["benchmark"]["metric"])
        window = recipe["benchmark"]["window"]
        rows = Bench.model_validate_json((run / "bench.json").read_text()).timed_rows
        value, used = start_figure(rows, formula, window)
        figures.append(StartFigure(start=i, side=run.name[3:], value=value, rows=used))
        [e] = record_evidence(rows, {0: _own_samples(run, 0) or lease}, formula, window)
        evidence.append(e.model_copy(update={"start": i}))
    assert [f.side for f in figures] == there["order"]
    why = explain_boost(figures, evidence, level=there["level"], noise_pct=there["noise_pct"])
    print(f"\nkept A/B: {why.status} {why.ratio:.4f} [{why.low:.4f}, {why.high:.4f}] "
          f"{why.reason}")
    assert why.status == there["verdict"] == "slower"
    assert why.reason.startswith("decided on starts ")
    assert set(why.used) | set(why.disturbed) == set(range(8))
    for k, cause in why.disturbed.items():
        assert cause in why.reason and k not in why.used
