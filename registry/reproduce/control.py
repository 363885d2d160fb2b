"""A controlled reproduction: the record and a control record re-run in alternating engine
starts in one window, the speed judged as (new / sealed) over (control now / control
sealed), so a host that is slower today as a whole fails neither.

Order: record, control, control, record, ... (`starts` of each). Every start is a fresh
engine, sealed (parent = the record it re-runs). Per suite, each start's figure is the
median decode rate of its unflagged rows; D = mean ln(record now) - mean ln(control now),
minus ln(record / control) as sealed (each sealed figure the geometric mean of its
record's undisturbed starts), over the starts the disturbance rule does not mark. Its
interval is Student's t over independent starts, the spread pooled within each side and
from each sealed record's own starts (registry.reproduce.why, registry.measure.sequential:
adjacent starts were not correlated on the kept H200 starts, so pairs bought nothing).
Passed when
the interval lies at or above the floor, failed when below, else inconclusive; slower
when it lies below 1.0. Beside it: the host factor (control now / control sealed, the
"host was N% slower") and the uncontrolled ratio of the same runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.formats.rundir import BenchRow
from registry.measure.evidence import StartEvidence
from registry.measure.metrics import formula_text
from registry.measure.sequential import MOST_STARTS, half_width, starts_needed
from registry.measure.starts import (
    LEVEL,
    PairedInterval,
    StartFigure,
    alternating,
    figures_by_start,
    log_spread,
    pooled,
    start_figure,
)
from registry.recipe.schema import MetricFormula
from registry.reproduce.judge import PerformanceVerdict, SuitePerformance, judge_rows
from registry.reproduce.why import Why, explain

if TYPE_CHECKING:
    from registry.contracts.sealed import SealedRun

RECORD, CONTROL = "record", "control"
Evidence = dict[str, list[StartEvidence]]  # record id -> its starts' evidence


class ControlStart(Frozen):
    start: int
    side: str = Field(description="record | control")
    record: str = Field(description="the new record this start was sealed as")
    run_dir: str
    figures: list[StartFigure] = Field(description="one per suite")


class ControlledSuite(Frozen):
    suite: str
    record_sealed: float | None = Field(description="the record's sealed figure, tok/s")
    control_sealed: float | None
    record_now: float | None = Field(description="geometric mean of the record's starts now")
    control_now: float | None
    host_factor: float | None = Field(description="control now / control sealed")
    uncontrolled: float | None = Field(description="record now / record sealed")
    interval: PairedInterval | None = Field(description="of (new/sealed)/(control now/sealed)")
    why: Why | None = Field(None, description="the starts used, those kept out, and why it "
                                              "decided or not")


class Controlled(Frozen):
    """What the control adds to a reproduction's verdict."""

    control: str = Field(description="the control record")
    order: list[str]
    starts: list[ControlStart]
    suites: list[ControlledSuite]
    uncontrolled: PerformanceVerdict = Field(description="the row-level verdict of the same "
                                                         "record starts, for comparison")
    evidence: list[StartEvidence] = Field(default_factory=list, description="each start's "
                                          "disturbance evidence, in run order")
    stopped: str | None = Field(None, description="why no further pair was started")
    max_starts: int | None = Field(None, description="--max-starts: most starts a side")
    look_level: float | None = Field(None, description="each look's interval level "
                                     "(the error spent over the looks)")


class Foreseen(Frozen):
    """What a planned controlled reproduction can decide, from the sealed starts alone."""

    suite: str
    starts: int = Field(description="the planned starts of each side")
    start_spread_pct: float | None = Field(description="100 x sd of one start's ln figure, "
                                           "pooled over both sealed records' starts")
    passes_above: float | None = Field(description="the controlled ratio the planned starts "
                                       "must show to pass: floor x exp(half-width)")
    starts_for_parity: int | None = Field(description="fewest starts a side with which a "
                                          f"ratio of 1.0 passes; None: not within {MOST_STARTS}")


def control_order(starts: int) -> list[str]:
    if starts < 1:
        raise InvalidInput(f"--starts {starts}: at least 1 of each")
    return alternating(starts, RECORD, CONTROL)


def judge_controlled(original: SealedRun, control: SealedRun, starts: list[ControlStart],
                     rows: dict[str, list[BenchRow]], formula: MetricFormula, window: int,
                     min_ratio: float, evidence: Evidence | None = None,
                     level: float = LEVEL) -> tuple[PerformanceVerdict, Controlled]:
    """The controlled speed verdict; `rows`: record id -> its sealed timed rows;
    `evidence`: record id -> its starts' disturbance evidence (the sealed records' and
    each new start's); `level`: each look's (registry.measure.sequential)."""
    names = [s.name for s in original.bench.suites]
    seen = evidence or {}
    suites = [_suite(k, name, original, control, starts, formula, window, seen, min_ratio,
                     level) for k, name in enumerate(names)]
    judged = [_performance(s, formula, window, min_ratio) for s in suites]
    statuses = {j.status for j in judged}
    status = next((s for s in ("failed", "inconclusive") if s in statuses), "passed")
    verdict = PerformanceVerdict(min_ratio=min_ratio, status=status,
                                 passed=status == "passed", suites=judged)
    mine = [r for s in starts if s.side == RECORD for r in rows[s.record]]
    uncontrolled = judge_rows(original.bench.timed_rows, mine, names, formula, window,
                              min_ratio, 1)
    return verdict, Controlled(control=control.id, order=[s.side for s in starts],
                               starts=starts, suites=suites, uncontrolled=uncontrolled,
                               evidence=[_start_evidence(s, seen) for s in starts])


def _start_evidence(s: ControlStart, seen: Evidence) -> StartEvidence:
    """A new start's evidence (a record of one start), numbered by its place in the order;
    none kept: an empty one (nothing marks it)."""
    found = seen.get(s.record) or []
    if not found:
        return StartEvidence(start=s.start, rows=0, figure=None, spread=None, stream="")
    return found[0].model_copy(update={"start": s.start})


def foresee(original: SealedRun, control: SealedRun, starts: int,
            formula: MetricFormula, window: int, min_ratio: float,
            level: float = LEVEL) -> list[Foreseen]:
    """Per suite: if the new starts spread as the sealed ones did, the ratio `starts` a
    side must show to pass, and how many starts a side a ratio of 1.0 needs, by the
    arithmetic of the verdict's own interval (independent starts, the sealed spread
    pooled in). The sealed records' own spread bounds it: no number of new starts removes
    their share."""
    out = []
    for name in (s.name for s in original.bench.suites):
        sealed = [_sealed_starts(run, name, formula, window) for run in (original, control)]
        var, df = pooled([x for x in map(log_spread, sealed) if x])
        sd = None if var is None else math.sqrt(var)
        weight = _sealed_weight(*sealed)
        now = None if sd is None else half_width(sd, starts, df=df, sealed_weight=weight,
                                                 level=level, paired=False)
        out.append(Foreseen(
            suite=name, starts=starts,
            start_spread_pct=None if sd is None else 100 * sd,
            passes_above=None if now is None else min_ratio * math.exp(now),
            starts_for_parity=None if sd is None else starts_needed(
                sd, -math.log(min_ratio), level=level, sealed_weight=weight, df=df,
                paired=False)))
    return out


def _suite(k: int, name: str, original: SealedRun, control: SealedRun,
           starts: Sequence[ControlStart], formula: MetricFormula, window: int,
           seen: Evidence, min_ratio: float, level: float) -> ControlledSuite:
    """One suite: the sealed records' undisturbed starts against the new ones (the
    disturbed ones kept out, named in `why`)."""
    r_sealed, c_sealed = (_sealed_starts(run, name, formula, window, seen.get(run.id, []))
                          for run in (original, control))
    figures = [s.figures[k] for s in starts]
    now = {side: _geomean([f.value for f in figures if f.side == side])
           for side in (RECORD, CONTROL)}
    rs, cs = _geomean(r_sealed), _geomean(c_sealed)
    why = None
    if rs and cs:
        spreads = [x for x in (log_spread(r_sealed), log_spread(c_sealed)) if x]
        why = explain(figures, [_start_evidence(s, seen) for s in starts],
                      sealed=math.log(rs / cs), sealed_weight=_sealed_weight(r_sealed, c_sealed),
                      start_spreads=spreads, min_ratio=min_ratio, level=level)
    return ControlledSuite(
        suite=name, record_sealed=rs, control_sealed=cs, record_now=now[RECORD],
        control_now=now[CONTROL], host_factor=_ratio(now[CONTROL], cs),
        uncontrolled=_ratio(now[RECORD], rs), interval=why.interval if why else None, why=why)


def _sealed_starts(run: SealedRun, suite: str, formula: MetricFormula, window: int,
                   evidence: Sequence[StartEvidence] = ()) -> list[float]:
    """Each sealed start's figure for one suite, the starts the rule marks disturbed left
    out (they are named in `show`)."""
    marked = {e.start for e in evidence if e.disturbed}
    return figures_by_start([r for r in run.bench.timed_rows
                             if r.suite == suite and r.start not in marked], formula, window)


def _sealed_weight(record: Sequence[float], control: Sequence[float]) -> float:
    """The sealed ratio's variance, in pair variances: each sealed figure is the mean of
    its record's starts' logs."""
    return (1 / max(len(record), 1) + 1 / max(len(control), 1)) / 2


def _performance(s: ControlledSuite, formula: MetricFormula, window: int,
                 min_ratio: float) -> SuitePerformance:
    base = SuitePerformance(suite=s.suite, formula=formula_text(formula, window),
                            original=s.record_sealed, new=s.record_now, ratio=None,
                            status="inconclusive", detail="")
    iv = s.interval
    if s.record_sealed is None or s.control_sealed is None:
        return base.model_copy(update={
            "status": "passed", "detail": "the record or its control has no unflagged decode "
                                          "rate to compare with"})
    if iv is None:
        if s.why is not None and s.why.disturbed:  # every start of a side kept out
            return base.model_copy(update={"detail": s.why.reason})
        return base.model_copy(update={"status": "failed", "detail": "no start of the record "
                                       "and its control gave an unflagged decode rate"})
    host = f"; the host ran at {s.host_factor:.3f} x the control's sealed speed" \
        if s.host_factor else ""
    if iv.low is None or iv.high is None:
        why = f"; {s.why.reason}" if s.why else ""
        return base.model_copy(update={"ratio": iv.ratio, "detail": f"controlled ratio "
                                       f"{iv.ratio:.3f}: {iv.method}{host}{why}"})
    status = ("passed" if iv.low >= min_ratio else "failed" if iv.high < min_ratio
              else "inconclusive")
    detail = (f"controlled ratio {iv.ratio:.3f}, {100 * iv.level:.4g}% interval "
              f"[{iv.low:.3f}, {iv.high:.3f}] vs floor {min_ratio} ({iv.method}){host}")
    if s.uncontrolled:
        detail += f"; uncontrolled {s.uncontrolled:.3f}"
    if s.why is not None:
        detail += f"; {s.why.reason}"
    return base.model_copy(update={"ratio": iv.ratio, "ratio_low": iv.low,
                                   "ratio_high": iv.high, "status": status,
                                   "slower": iv.high < 1.0, "detail": detail})


def start_figures(i: int, side: str, rid: str, rows: list[BenchRow], names: list[str],
                  formula: MetricFormula, window: int) -> list[StartFigure]:
    out = []
    for name in names:
        value, used = start_figure([r for r in rows if r.suite == name], formula, window)
        out.append(StartFigure(start=i, side=side, value=value, rows=used, record=rid))
    return out


def run_dir_of(out: Path, i: int, side: str) -> Path:
    return out / f"{i:02d}-{side}"


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top and bottom else None


def _geomean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v]
    return statistics.geometric_mean(kept) if kept else None
