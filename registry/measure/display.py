"""How a figure is written beside its flag and interval, the same in every command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from registry.formats.figures import NOT_JUDGED, state

if TYPE_CHECKING:
    from registry.formats.figures import Headline, Metric, Quality
    from registry.formats.record import SuiteResult

def quality_lines(results: Sequence[SuiteResult]) -> list[str]:
    """One line per suite: its state, the flagged rows and why."""
    out = []
    for r in results:
        q = r.quality
        if q is None:
            out.append(f"{r.suite}: measurement {NOT_JUDGED}")
            continue
        line = f"{r.suite}: measurement {q.state}, {q.used} of {r.rows} rows in decode figures"
        if q.burst:
            line += f"; burst rows {_indices(q.burst)}"
        if q.warmup:
            line += f"; warm-up rows {_indices(q.warmup)}"
        out.append(line + "".join(f"\n  {reason}" for reason in q.reasons))
    return out


DEGRADED_MEANS = (
    "degraded: the decode figures stand on fewer unflagged rows than a figure needs (a "
    "busy host delivers tokens in bursts, which time nothing). The record is sealed and "
    "its identity and outputs count; its speed is shown flagged, and a reproduction "
    "judges speed on the unflagged rows alone (with none: performance not judged). For "
    "speed figures, run again on a quieter host (docs/measurement.md, 'Row quality').")


def degraded_meaning(results: Sequence[SuiteResult]) -> str | None:
    """What a degraded measurement means, once, where a seal or a run first shows it."""
    return DEGRADED_MEANS if any(r.quality and r.quality.degraded for r in results) else None


def _indices(rows: list[int]) -> str:
    return ",".join(str(i) for i in rows)


def value_text(metric: Metric, quality: Quality | None) -> str:
    """`733.8 [722.6, 738.7]`, with `(degraded)` when the suite's measurement is."""
    text = f"{metric.value:.6g}"
    if metric.ci_low is not None and metric.ci_high is not None:
        text += f" [{metric.ci_low:.4g}, {metric.ci_high:.4g}]"
    if quality is None or quality.degraded:
        text += f" ({state(quality)})"
    return text


def headline_text(h: Headline, *, interval: bool = False) -> str:
    """`595.19`, `595.19 [590.1, 600.2]`, `733.75 (degraded)`, `- (degraded)`: the headline
    figure with its quality beside it unless valid (blank when the record has no results)."""
    if h.metric is None:
        return f"- ({h.quality})" if h.quality else ""
    text = f"{h.metric.value:.2f}"
    if interval and h.metric.ci_low is not None and h.metric.ci_high is not None:
        text += f" [{h.metric.ci_low:.4g}, {h.metric.ci_high:.4g}]"
    return text + (f" ({h.quality})" if h.flagged else "")
