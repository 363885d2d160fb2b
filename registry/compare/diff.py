"""`registry diff A B`: a serving-aware comparison of two runs, in sections.

Identity (each field classified as identity / performance / environment, precision
axes always shown), sources, metrics (by the formula each record names), outputs (per
prompt, first differing token) and contracts (whether the two are comparable under
each one, and why not). The inputs are `Side`s: a sealed record or an unsealed run
directory, loaded by `registry.compare.sides`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.contracts.teacher import AXES as BITWISE_AXES
from registry.contracts.teacher import SUITE_AXIS
from registry.formats.figures import Metric, state
from registry.formats.identity import PRECISION_AXES, Kind, ResolvedField, ResolvedIdentity, kind_of
from registry.formats.record import PublishedFigure, Source, SuiteResult
from registry.formats.rundir import BenchRow

# Capacity facts compared as figures (ratios), beside the client metrics.
CAPACITY_FIELDS = ("kv.capacity_tokens", "kv.max_concurrency", "kv.memory_gib")
FP8_RULE = "Never use BF16 token hashes as an expected FP8 bitwise gate"


class Side(Frozen):
    """One side of a diff: everything compared, however it was loaded."""

    label: str = Field(description="record id or run directory")
    identity: ResolvedIdentity
    results: list[SuiteResult] = Field(default_factory=list)
    rows: list[BenchRow] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    suites: dict[str, str | None] = Field(default_factory=dict, description="name -> sha256")
    unproven: str | None = Field(None, description="why its evidence proves nothing, if so")
    published: list[PublishedFigure] = Field(default_factory=list,
                                             description="the lab's figures, re-derived again")


class FieldDiff(Frozen):
    name: str
    kind: Kind
    changed: bool
    a: ResolvedField | None
    b: ResolvedField | None


class SourceDiff(Frozen):
    role: str
    changed: bool
    a: Source | None
    b: Source | None
    diff_digests_equal: bool | None = Field(None, description="uncommitted diffs equal")


class MetricDiff(Frozen):
    suite: str
    name: str
    unit: str
    a: float | None
    b: float | None
    delta: float | None = Field(None, description="b - a")
    relative: float | None = Field(None, description="(b - a) / a")
    ratio: float | None = Field(None, description="b / a")
    formula_a: str | None
    formula_b: str | None
    comparable: bool
    note: str | None = None
    quality_a: str | None = Field(None, description="a's measurement: valid | degraded")
    quality_b: str | None = None
    beyond_noise: bool | None = Field(
        None, description="the two 95% intervals do not overlap (None: no intervals)")


class OutputDiff(Frozen):
    suite: str
    prompt_id: str
    equal: bool
    first_diff_index: int | None = None
    a_token: int | None = None
    b_token: int | None = None
    text_equal: bool | None = None


class PublishedPair(Frozen):
    """A figure the lab published for either record, with each side's re-derivation."""

    metric: str
    aggregation: str
    a: PublishedFigure | None
    b: PublishedFigure | None


class Comparability(Frozen):
    contract: str
    comparable: bool
    reasons: list[str] = Field(default_factory=list)


class Diff(Frozen):
    schema_: str = Field("registry.diff/v1", alias="schema")
    a: str
    b: str
    identity: list[FieldDiff]
    sources: list[SourceDiff]
    metrics: list[MetricDiff]
    outputs: list[OutputDiff]
    contracts: list[Comparability]
    published: list[PublishedPair] = Field(default_factory=list)
    changed: dict[str, list[str]] = Field(description="kind -> changed field names")
    unproven: dict[str, str] = Field(default_factory=dict,
                                     description="a | b -> why that side proves nothing")


def _field_changed(a: ResolvedField | None, b: ResolvedField | None) -> bool:
    values = [f.resolved if f and f.resolved is not None else (f.declared if f else None)
              for f in (a, b)]
    return values[0] != values[1]


def compare_identity(a: ResolvedIdentity, b: ResolvedIdentity) -> list[FieldDiff]:
    names = sorted(set(a.fields) | set(b.fields) | set(PRECISION_AXES))
    out = [FieldDiff(name=n, kind=kind_of(n), a=a.fields.get(n), b=b.fields.get(n),
                     changed=_field_changed(a.fields.get(n), b.fields.get(n))) for n in names]
    # changed rows first, then the precision axes, then the rest
    return sorted(out, key=lambda d: (not d.changed, d.name not in PRECISION_AXES, d.name))


def compare_sources(a: list[Source], b: list[Source]) -> list[SourceDiff]:
    by_a, by_b = {s.role: s for s in a}, {s.role: s for s in b}
    out = []
    for role in sorted(set(by_a) | set(by_b)):
        sa, sb = by_a.get(role), by_b.get(role)
        digests = (None if not (sa and sb and (sa.dirty or sb.dirty))
                   else sa.diff_sha256 == sb.diff_sha256)
        changed = (sa is None or sb is None or sa.commit != sb.commit or sa.dirty != sb.dirty
                   or digests is False)
        out.append(SourceDiff(role=role, changed=changed, a=sa, b=sb, diff_digests_equal=digests))
    return out


def _figure(suite: str, name: str, unit: str, a: float | None, b: float | None,
            fa: str | None, fb: str | None) -> MetricDiff:
    # a missing figure is named first: "formulas differ" against nothing says nothing
    if a is None or b is None:
        lacking = "neither side has it" if a is None and b is None else \
            f"only {'B' if a is None else 'A'} has it: {'A' if a is None else 'B'} lacks it"
        return MetricDiff(suite=suite, name=name, unit=unit, a=a, b=b, formula_a=fa,
                          formula_b=fb, comparable=False, note=lacking)
    if fa != fb:
        return MetricDiff(suite=suite, name=name, unit=unit, a=a, b=b, formula_a=fa,
                          formula_b=fb, comparable=False,
                          note="formulas differ: not compared")
    return MetricDiff(suite=suite, name=name, unit=unit, a=a, b=b, formula_a=fa, formula_b=fb,
                      comparable=True, delta=b - a, relative=(b - a) / a if a else None,
                      ratio=b / a if a else None)


def compare_metrics(a: Side, b: Side) -> list[MetricDiff]:
    out = []
    results_a, results_b = {r.suite: r for r in a.results}, {r.suite: r for r in b.results}
    for suite in sorted(set(results_a) & set(results_b)):
        ra, rb = results_a[suite], results_b[suite]
        for name in sorted(set(ra.metrics) | set(rb.metrics)):
            x, y = ra.metrics.get(name), rb.metrics.get(name)
            unit = next(m.unit for m in (x, y) if m is not None)
            figure = _figure(suite, name, unit, x.value if x else None, y.value if y else None,
                             x.formula if x else None, y.formula if y else None)
            out.append(figure.model_copy(update={
                "quality_a": state(ra.quality), "quality_b": state(rb.quality),
                "beyond_noise": _beyond_noise(x, y)}))
    for name in CAPACITY_FIELDS:
        x, y = a.identity.value(name), b.identity.value(name)
        if x is not None or y is not None:
            out.append(_figure("engine", name, "", _number(x), _number(y), "engine log",
                               "engine log"))
    return out


def _beyond_noise(x: Metric | None, y: Metric | None) -> bool | None:
    """Whether two figures' 95% intervals are disjoint (a conservative test: intervals
    that overlap a little can still differ at 95%)."""
    if not (x and y and x.ci_low is not None and x.ci_high is not None
            and y.ci_low is not None and y.ci_high is not None):
        return None
    return x.ci_high < y.ci_low or y.ci_high < x.ci_low


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def compare_outputs(a: list[BenchRow], b: list[BenchRow]) -> list[OutputDiff]:
    rows_b = {(r.suite, r.prompt_id): r for r in b}
    out = []
    for ra in a:
        rb = rows_b.get((ra.suite, ra.prompt_id))
        if rb is None:
            continue
        first = next((i for i, (x, y) in enumerate(zip(ra.token_ids, rb.token_ids, strict=False))
                      if x != y), None)
        if first is None and len(ra.token_ids) != len(rb.token_ids):
            first = min(len(ra.token_ids), len(rb.token_ids))
        texts = ((ra.text_sha256 == rb.text_sha256)
                 if ra.text_sha256 and rb.text_sha256 else None)
        out.append(OutputDiff(suite=ra.suite, prompt_id=ra.prompt_id, equal=first is None,
                              first_diff_index=first, a_token=_token_at(ra.token_ids, first),
                              b_token=_token_at(rb.token_ids, first), text_equal=texts))
    return out


def _token_at(ids: list[int], index: int | None) -> int | None:
    return ids[index] if index is not None and index < len(ids) else None


def _axis_value(side: Side, axis: str) -> Any:
    if axis == SUITE_AXIS:
        return sorted(v for v in side.suites.values() if v) or None
    return side.identity.value(axis)


def _shown(value: Any) -> str:
    return "unresolved" if value is None else str(value)


def compare_contracts(a: Side, b: Side) -> list[Comparability]:
    """Bitwise needs every binding axis equal; the others judge each run on its own."""
    reasons = []
    for axis in BITWISE_AXES:
        va, vb = _axis_value(a, axis), _axis_value(b, axis)
        if va != vb:
            why = f"{axis} {_shown(va)} vs {_shown(vb)}"
            if axis == "precision.kv_cache":
                why += f" — {FP8_RULE}"
            reasons.append(why)
    return [
        Comparability(contract="bitwise-teacher", comparable=not reasons, reasons=reasons),
        Comparability(contract="self-consistency", comparable=True,
                      reasons=["each run is judged against its own repeats"]),
        Comparability(contract="semantic-gates", comparable=True,
                      reasons=["gates judge each run's outputs on their own"]),
    ]


def compare_published(a: list[PublishedFigure], b: list[PublishedFigure]
                      ) -> list[PublishedPair]:
    first_a, first_b = ({(f.metric, f.aggregation): f for f in reversed(side)} for side in (a, b))
    return [PublishedPair(metric=m, aggregation=g, a=first_a.get((m, g)), b=first_b.get((m, g)))
            for m, g in sorted(set(first_a) | set(first_b))]


def diff(a: Side, b: Side) -> Diff:
    identity = compare_identity(a.identity, b.identity)
    changed: dict[str, list[str]] = {k.value: [] for k in Kind}
    for d in identity:
        if d.changed:
            changed[d.kind.value].append(d.name)
    return Diff(a=a.label, b=b.label, identity=identity,
                sources=compare_sources(a.sources, b.sources),
                metrics=compare_metrics(a, b), outputs=compare_outputs(a.rows, b.rows),
                contracts=compare_contracts(a, b),
                published=compare_published(a.published, b.published), changed=changed,
                unproven={k: s.unproven for k, s in (("a", a), ("b", b)) if s.unproven})
