"""The figures a record carries: each metric with its formula and interval, a suite's
measurement quality (the rules that judge it are in registry.measure.quality), and the
record's headline figure as every view shows it.

`headline` is the one place a view takes a record's headline figure and quality from:
the signed results, never a re-derivation of its own (list, show, diff, compare, review
and the report all call it, so they state the same figure and the same quality)."""

from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from registry.base.model import Frozen, empty_list

NOT_JUDGED = "not judged (sealed before measurement quality was recorded)"
HEADLINE = "decode_tok_s.median"  # the figure people rank runs by


class Metric(Frozen):
    """One figure with the formula that derived it and, for headline figures, its interval."""

    name: str
    value: float
    unit: str
    formula: str
    count: int  # rows (or, for ITL, gaps) that contributed
    ci_low: float | None = Field(None, description="95% bootstrap interval, low end")
    ci_high: float | None = Field(None, description="95% bootstrap interval, high end")


class RowFlag(StrEnum):
    burst = "burst"
    warmup = "warm-up"
    short = "short"  # fewer tokens than the decode window
    error = "error"


class Pace(Frozen):
    """The run's own decode rhythm, from its arrivals (see the rule above)."""

    step_s: float = Field(description="tau: median arrival gap at or above the floor")
    width: float = Field(description="kappa: p90 tokens per paced arrival")


class RowQuality(Frozen):
    index: int
    round: int = 0
    prompt_id: str
    flags: list[RowFlag] = Field(default_factory=empty_list)
    burst_tokens: float = Field(0.0, description="window tokens the run's pace cannot explain")
    arrivals: int = Field(0, description="distinct arrival times in the decode window")


class Quality(Frozen):
    """A suite's measurement quality: `valid`, or `degraded` with its reasons."""

    state: str = Field(description="valid | degraded")
    reasons: list[str] = Field(default_factory=empty_list)
    pace: Pace | None = Field(None, description="the run's step and width (see rule)")
    used: int = Field(description="rows the decode figures use")
    burst: list[int] = Field(default_factory=empty_list,
                             description="row indices that arrived in bursts")
    warmup: list[int] = Field(default_factory=empty_list, description="warm-up row indices")
    rows: list[RowQuality] = Field(default_factory=empty_list)

    @property
    def degraded(self) -> bool:
        return self.state == "degraded"


class SuiteResult(Frozen):
    """Metrics re-derived from one suite's raw rows, each naming its formula."""

    suite: str
    rows: int
    errors: int = 0
    formula: str = Field(description="the decode-rate formula the recipe names")
    window: int
    metrics: dict[str, Metric]
    quality: Quality | None = Field(None, description="None: sealed before quality was judged")


def state(quality: Quality | None) -> str:
    return quality.state if quality else "not judged"


def worst(results: Sequence[SuiteResult]) -> str | None:
    """A record's measurement quality: degraded if any suite is, None without results."""
    if not results:
        return None
    states = {state(r.quality) for r in results}
    return next((s for s in ("degraded", "not judged") if s in states), "valid")


class Headline(Frozen):
    """A record's headline figure as its statement signed it, with the record's quality."""

    metric: Metric | None = Field(None, description="None: no suite has the figure (e.g. no "
                                                    "row was left for the decode figures)")
    suite: str | None = None
    quality: str | None = Field(None, description="valid | degraded | not judged; None: no "
                                                  "results at all")
    reasons: list[str] = Field(default_factory=empty_list, description="why it is degraded")

    @property
    def value(self) -> float | None:
        return self.metric.value if self.metric else None

    @property
    def flagged(self) -> bool:
        """Anything but a valid measurement: the views mark it beside the figure."""
        return self.quality is not None and self.quality != "valid"


def record_headline(results: Sequence[SuiteResult], imported: bool) -> Headline:
    """A record's headline as every view states it: an imported record whose capsule
    carried no rows to judge is `not judged` (formats/display.py), not blank."""
    from registry.formats.display import record_quality

    top = headline(results)
    return top.model_copy(update={"quality": record_quality(top.quality, imported)})


def headline(results: Sequence[SuiteResult]) -> Headline:
    """The first suite's decode median that has one, and the record's worst quality."""
    found = next((s for s in results if HEADLINE in s.metrics), None)
    reasons = [f"{s.suite}: {reason}" for s in results if s.quality
               for reason in s.quality.reasons]
    return Headline(metric=found.metrics[HEADLINE] if found else None,
                    suite=found.suite if found else None, quality=worst(results),
                    reasons=reasons)
