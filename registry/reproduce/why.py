"""Why a controlled speed verdict decided or not: the starts it used, the disturbed starts
it kept out (registry/measure/disturbance.py), and, when it could not decide, which of the
two it is: the host was disturbed, or the spread the starts showed needs more of them.

A pair (record start, control start) with a disturbed start is left out of the interval:
on the kept H200 captures the disturbed starts ran 10-29% slow (docs/measurement.md,
"Disturbed starts"), far beyond any difference a verdict is asked to see, so weighting them
would still let one of them move the ratio.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import Field

from registry.base.model import Frozen
from registry.measure.disturbance import StartEvidence
from registry.measure.starts import StartFigure, foreseen_half, pair_logs, paired_interval

MOST_STARTS = 200  # beyond this a decision is called out of reach


class Why(Frozen):
    status: str = Field(description="passed | failed | inconclusive")
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    used: list[int] = Field(description="the starts behind the interval, by position")
    disturbed: dict[int, str] = Field(description="start -> why it was kept out")
    reason: str = Field(description="what decided it, or why nothing could")


def explain(figures: Sequence[StartFigure], evidence: Sequence[StartEvidence], *,
            sealed: float, sealed_weight: float, start_spreads: Sequence[tuple[float, int]],
            min_ratio: float, a: str = "control", b: str = "record") -> Why:
    """The controlled verdict over the undisturbed pairs (figures and evidence in run
    order, one each per start), and why."""
    marks = {f.start: e.disturbed for f, e in zip(figures, evidence, strict=True)
             if e.disturbed}
    ordered = sorted(figures, key=lambda f: f.start)
    pairs = [(x, y) for x, y in zip(ordered[::2], ordered[1::2], strict=False)
             if x.start not in marks and y.start not in marks]
    used = [f.start for pair in pairs for f in pair]
    d = pair_logs([f for pair in pairs for f in pair], a=a, b=b)
    iv = paired_interval(d, sealed=sealed, sealed_weight=sealed_weight,
                         start_spreads=start_spreads)
    if iv is None or iv.low is None or iv.high is None:
        reason = (_disturbed_text(marks) if marks else
                  "no replicated pair of undisturbed starts: no interval")
        return Why(status="inconclusive", used=used, disturbed=marks, reason=reason,
                   ratio=iv.ratio if iv else None)
    status = ("passed" if iv.low >= min_ratio else "failed" if iv.high < min_ratio
              else "inconclusive")
    if status != "inconclusive":
        reason = f"decided on starts {', '.join(map(str, used))}"
        if marks:
            reason += f"; kept out: {_disturbed_text(marks)}"
    elif marks:
        reason = _disturbed_text(marks)
    else:
        reason = _needs(iv.spread, sealed_weight, min_ratio, iv.df)
    return Why(status=status, ratio=iv.ratio, low=iv.low, high=iv.high, used=used,
               disturbed=marks, reason=reason)


def starts_needed(pair_sd: float, sealed_weight: float, min_ratio: float,
                  df: int) -> int | None:
    """Fewest pairs (starts a side) with which a ratio of 1.0 passes, if pairs spread
    `pair_sd` (sd of one pair's ln ratio, `df` degrees of freedom); None beyond
    MOST_STARTS."""
    spread = [(pair_sd ** 2 / 2, max(df, 1))]
    return next((n for n in range(1, MOST_STARTS + 1)
                 if (h := foreseen_half(spread, n, sealed_weight)) is not None
                 and math.exp(-h) >= min_ratio), None)


def _needs(pair_sd: float | None, sealed_weight: float, min_ratio: float, df: int) -> str:
    if pair_sd is None:
        return "no spread to plan from"
    n = starts_needed(pair_sd, sealed_weight, min_ratio, df)
    at = f"at this spread ({100 * pair_sd / math.sqrt(2):.1f}% a start)"
    return (f"{at} a decision needs {n} starts a side" if n else
            f"{at} a decision needs more than {MOST_STARTS} starts a side: the sealed "
            f"records' own few starts bound it; re-seal them over more starts")


def _disturbed_text(marks: dict[int, str]) -> str:
    return "; ".join(f"start {k}: {why}" for k, why in sorted(marks.items()))
