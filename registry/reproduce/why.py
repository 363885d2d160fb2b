"""Why a speed verdict over engine starts decided or not: the starts it used, the disturbed
starts it kept out (registry/measure/disturbance.py), and, when it could not decide, which
of the two it is: the host was disturbed, or the spread the starts showed needs more of
them (registry/measure/sequential.starts_needed, docs/measurement.md).

A disturbed start is left out of the interval, alone: the starts are analysed as
independent (the kept H200 starts show no correlation between adjacent starts, so pairing
them bought nothing and cost half the degrees of freedom; docs/measurement.md, "Sequential
starts"), and on the kept captures the disturbed starts ran 10-29% slow, far beyond any
difference a verdict is asked to see, so weighting them would still let one of them move
the ratio.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from registry.base.model import Frozen
from registry.measure.evidence import StartEvidence
from registry.measure.sequential import MOST_STARTS, independent_interval, starts_needed
from registry.measure.starts import LEVEL, NOISE_PCT, PairedInterval, StartFigure, boost_verdict

if TYPE_CHECKING:
    from registry.reproduce.judge import PerformanceVerdict


class Why(Frozen):
    status: str = Field(description="passed | failed | inconclusive (reproduce); faster | "
                                    "slower | no difference | inconclusive (ab)")
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    interval: PairedInterval | None = Field(None, description="over the starts used")
    used: list[int] = Field(description="the starts behind the interval, by position")
    disturbed: dict[int, str] = Field(description="start -> why it was kept out")
    basis: str = Field("", description="what the disturbance rule could judge the starts on")
    needed: int | None = Field(None, description="undecided: the starts a side a decision "
                                                 "needs at this spread (None: out of reach)")
    reason: str = Field(description="what decided it, or why nothing could")


def explain(figures: Sequence[StartFigure], evidence: Sequence[StartEvidence], *,
            sealed: float, sealed_weight: float, start_spreads: Sequence[tuple[float, int]],
            min_ratio: float, level: float = LEVEL, a: str = "control",
            b: str = "record") -> Why:
    """The controlled reproduction's verdict over the undisturbed starts (figures and
    evidence one each per start), and why."""
    marks, used, iv = _interval(figures, evidence, a, b, sealed=sealed,
                                sealed_weight=sealed_weight, start_spreads=start_spreads,
                                level=level)
    status = "inconclusive"
    if iv is not None and iv.low is not None and iv.high is not None:
        status = ("passed" if iv.low >= min_ratio else "failed" if iv.high < min_ratio
                  else "inconclusive")
    # decided on the side of the floor the ratio seen lies: passed above, failed below
    seen = math.log(iv.ratio) if iv else 0.0
    needed = _needed(iv, [abs(seen - math.log(min_ratio))], sealed_weight, start_spreads,
                     level)
    why = _why(status, iv, used, marks, evidence, needed, status == "inconclusive")
    if why.reason.endswith(f"more than {MOST_STARTS} starts a side") and sealed_weight:
        why = why.model_copy(update={"reason": why.reason.replace(
            f"more than {MOST_STARTS} starts a side", "more starts than any run makes: the "
            "sealed records' own few starts bound it; re-seal them over more starts")})
    return why


def explain_boost(figures: Sequence[StartFigure], evidence: Sequence[StartEvidence], *,
                  level: float = LEVEL, noise_pct: float = NOISE_PCT) -> Why:
    """An A/B's verdict on one suite over the undisturbed starts (side A, side B), and why."""
    marks, used, iv = _interval(figures, evidence, "A", "B", level=level)
    status = boost_verdict(iv, noise_pct)
    # decided either way: the interval inside +-noise, or clear of 0
    seen = abs(math.log(iv.ratio)) if iv else 0.0
    margins = [math.log(1 + noise_pct / 100) - seen, seen]
    needed = _needed(iv, margins, 0.0, (), level)
    return _why(status, iv, used, marks, evidence, needed, status == "inconclusive")


def _interval(figures: Sequence[StartFigure], evidence: Sequence[StartEvidence], a: str, b: str,
              *, sealed: float = 0.0, sealed_weight: float = 0.0,
              start_spreads: Sequence[tuple[float, int]] = (), level: float = LEVEL
              ) -> tuple[dict[int, str], list[int], PairedInterval | None]:
    marks = {f.start: e.disturbed for f, e in zip(figures, evidence, strict=True)
             if e.disturbed}
    kept = [f for f in sorted(figures, key=lambda f: f.start)
            if f.start not in marks and f.value]
    logs = {side: [math.log(f.value) for f in kept if f.side == side and f.value]
            for side in (a, b)}
    iv = independent_interval(logs[a], logs[b], sealed=sealed, sealed_weight=sealed_weight,
                              start_spreads=start_spreads, level=level)
    return marks, [f.start for f in kept], iv


def _needed(iv: PairedInterval | None, margins: list[float], sealed_weight: float,
            start_spreads: Sequence[tuple[float, int]], level: float) -> int | None:
    if iv is None or iv.spread is None:
        return None
    df = sum(d for _, d in start_spreads)
    found = [n for m in margins if m > 0 and (n := starts_needed(
        iv.spread / math.sqrt(2), m, level=level, sealed_weight=sealed_weight, df=df,
        paired=False)) is not None]
    return min(found, default=None)


def _why(status: str, iv: PairedInterval | None, used: list[int], marks: dict[int, str],
         evidence: Sequence[StartEvidence], needed: int | None, undecided: bool) -> Why:
    basis = "; ".join(sorted({e.basis for e in evidence}))
    if not undecided:
        reason = f"decided on starts {', '.join(map(str, used))}"
        if marks:
            reason += f"; kept out: {disturbed_text(marks)}"
    elif iv is None or iv.spread is None:
        reason = ("no start of one side to decide on" if iv is None else
                  "no replicated start: no spread to decide or plan from")
        if marks:
            reason = f"{disturbed_text(marks)}; the rest: {reason}"
    else:
        at = f"at this spread ({100 * iv.spread / math.sqrt(2):.1f}% a start)"
        reason = (f"{at} a decision needs {needed} starts a side" if needed else
                  f"{at} a decision needs more than {MOST_STARTS} starts a side")
        if marks:
            reason = f"{disturbed_text(marks)}; the undisturbed starts: {reason}"
    return Why(status=status, ratio=iv.ratio if iv else None, low=iv.low if iv else None,
               high=iv.high if iv else None, interval=iv, used=used, disturbed=marks,
               basis=basis, needed=needed if undecided else None, reason=reason)


def disturbed_text(marks: dict[int, str]) -> str:
    """`host disturbed (GPU 71% busy while decoding): starts 2 and 5`, one clause per cause."""
    by: dict[str, list[int]] = {}
    for k, why in sorted(marks.items()):
        by.setdefault(why, []).append(k)
    return "; ".join(f"{why}: start{'s' if len(ks) > 1 else ''} {_and(ks)}"
                     for why, ks in by.items())


def _and(ks: list[int]) -> str:
    words = [str(k) for k in ks]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def one_start_held(verdict: PerformanceVerdict, original: Sequence[StartEvidence],
                   new: Sequence[StartEvidence]) -> PerformanceVerdict:
    """A reproduction of one start (no control) judges that start's rows against the
    sealed ones, so it cannot tell a slow record from a slow host. A speed failure over a
    start the disturbance rule marks, the new one or a sealed one, is not signed: the
    suite is inconclusive and names the disturbance (on the disturbed H200 lease such
    starts ran 10-29% slow; docs/measurement.md, "Disturbed starts"). A pass stands: a
    disturbance slows a start, so a record that passes through one passes."""
    marks = [f"{side} start {e.start}: {e.disturbed}"
             for side, found in (("new", new), ("sealed", original))
             for e in found if e.disturbed]
    if not marks or not any(s.status == "failed" for s in verdict.suites):
        return verdict
    said = "; ".join(marks)
    suites = [s.model_copy(update={
        "status": "inconclusive",
        "detail": f"{s.detail}; not failed, {said}: a disturbed start says nothing of the "
                  "record (re-run it on a quiet host, or against a control: --control)"})
              if s.status == "failed" else s for s in verdict.suites]
    from registry.reproduce.judge import overall_status

    status = overall_status(s.status for s in suites)
    return verdict.model_copy(update={"suites": suites, "status": status,
                                      "passed": status == "passed"})
