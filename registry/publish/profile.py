"""A performance profile: a sweep (context length, concurrency or speculative depth) as
one object of measured points, each a sealed record's headline decode figure with the
record as its evidence. The lab's rules: at least two points, x unique and ascending,
every value measured and positive, never interpolated or extrapolated; a record whose
figure is missing or degraded is withheld, and `scope` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.errors import InvalidInput
from registry.formats.display import short_id
from registry.formats.record import Statement
from registry.store.home import Home


class XMetric(StrEnum):
    context_tokens = "context_tokens"
    concurrent_sequences = "concurrent_sequences"
    speculative_tokens = "speculative_tokens"


class ProfilePoint(Frozen):
    x: int
    value: float = Field(gt=0)
    low: float | None = None
    high: float | None = None
    evidence: str = Field(description="the record id the point was measured in")


class PerformanceProfile(Frozen):
    metric: str = "decode"
    unit: str = "tok/s"
    x_metric: XMetric
    points: list[ProfilePoint] = Field(min_length=2)
    scope: str = Field(description="what the points cover, and which records were withheld")
    withheld: list[str] = Field(default_factory=empty_list)


def profile_of(home: Home, records: Sequence[str], x_metric: XMetric) -> PerformanceProfile:
    """The profile over `records` (ids or prefixes), one point each along `x_metric`."""
    from registry.formats.figures import headline
    from registry.formats.record import parse_statement
    from registry.store.query import checked_statement

    points: list[ProfilePoint] = []
    withheld: list[str] = []
    for prefix in records:
        rid, check, data = checked_statement(home, prefix)
        statement = parse_statement(data) if check.ok else None
        top = headline(statement.predicate.results) if statement else None
        x = _x(statement, x_metric) if statement else None
        if statement is None or top is None or top.metric is None or x is None \
                or top.quality != "valid" or top.metric.value <= 0:
            why = ("does not verify" if statement is None else
                   f"no {x_metric.value}" if x is None else
                   "no decode figure" if top is None or top.metric is None else
                   f"measurement {top.quality}")
            withheld.append(f"{short_id(rid)}: {why}")
            continue
        m = top.metric
        points.append(ProfilePoint(x=x, value=m.value, low=m.ci_low, high=m.ci_high,
                                   evidence=rid))
    points.sort(key=lambda p: p.x)
    xs = [p.x for p in points]
    if len(set(xs)) != len(xs):
        raise InvalidInput(f"two records measure the same {x_metric.value} "
                           f"({sorted(x for x in xs if xs.count(x) > 1)[0]}): a profile "
                           "has one point per x", hint="give one record per point")
    if len(points) < 2:
        raise InvalidInput(f"a profile needs at least two measured points, got {len(points)}"
                           + (f" ({'; '.join(withheld)})" if withheld else ""),
                           hint="seal more points of the sweep; nothing is interpolated")
    scope = (f"{len(points)} measured points, {x_metric.value} {xs[0]}-{xs[-1]}; "
             "no value between or beyond them is implied")
    if withheld:
        scope += f"; {len(withheld)} withheld"
    return PerformanceProfile(x_metric=x_metric, points=points, scope=scope, withheld=withheld)


def _x(statement: Statement, x_metric: XMetric) -> int | None:
    """The sweep coordinate a record's recipe declares for its first suite."""
    recipe = statement.predicate.recipe or {}
    bench = recipe.get("benchmark", {})
    value = {
        XMetric.context_tokens: (bench.get("suites") or [{}])[0].get("context_tokens"),
        XMetric.concurrent_sequences: bench.get("concurrency", 1),
        XMetric.speculative_tokens: (recipe.get("draft") or {}).get("num_speculative_tokens"),
    }[x_metric]
    return value if isinstance(value, int) and not isinstance(value, bool) else None
