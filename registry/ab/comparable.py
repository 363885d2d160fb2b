"""Which identity axes two sides of a comparison differ on, and whether a boost may be
computed between them.

The lab's rule (reference/lab-claims.md): no boost when model/checkpoint, quantization
or quality class, GPU topology, runtime base, workload/suite, cache policy, metric
window or quality outcome differ, unless that difference is the one being measured.
Each side is a recipe (its declared values) or a record (its sealed recipe, with the
values the resolver proved taking the place of the declared ones). `--delta NAME`
names what may differ: an axis (`quality-class`) or one field (`precision.kv_cache`,
`engine.args.max_num_seqs`); a KV-precision change is a change of quality class unless
named. Everything else must be equal, or the comparison is refused naming the axes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput, Refused
from registry.formats.identity import ResolvedIdentity
from registry.recipe.schema import Recipe
from registry.resolve.declared import declared_values

# axis -> the identity fields it is made of (engine args and workload keys are added
# per recipe below: `engine.args.*` belong to `engine-args`, `benchmark.*` to theirs)
AXES: dict[str, tuple[str, ...]] = {
    "model": ("model.path", "model.revision", "model.manifest_sha256", "model.architecture",
              "draft.architecture", "draft.revision", "draft.manifest_sha256", "spec.method",
              "spec.num_tokens"),
    "quality-class": ("precision.dtype", "precision.weights", "precision.activations",
                      "precision.draft_weights",
                      "precision.kv_cache", "precision.kv_scales",
                      "precision.draft_kv_cache"),
    "topology": ("parallel.tensor", "parallel.pipeline", "parallel.data", "parallel.expert",
                 "runtime.device", "hardware.device", "hardware.count"),
    "runtime-base": ("engine.name", "engine.version", "engine.commit", "engine.env"),
    "workload": ("benchmark.api", "benchmark.suites", "benchmark.max_tokens",
                 "benchmark.concurrency", "benchmark.temperature", "benchmark.top_p",
                 "benchmark.seed", "benchmark.request_extra"),
    "cache-policy": ("engine.args.enable_prefix_caching", "benchmark.allow_prefix_reuse"),
    "metric-window": ("benchmark.metric", "benchmark.window"),
    "quality-outcome": ("quality.contract", "quality.teacher", "quality.gates", "outputs"),
}
# vLLM arguments the loader fills from the recipe's tables (registry.recipe.loader): they
# are compared as those tables' fields, so naming `precision.kv_cache` covers them
DERIVED_ARGS = frozenset({"model", "revision", "kv_cache_dtype", "dtype", "tensor_parallel_size",
                          "pipeline_parallel_size", "data_parallel_size",
                          "enable_expert_parallel", "speculative_config"})
ENGINE_ARGS = "engine-args"  # every other engine argument: a knob, named to be changed
# Identity fields the resolver proves for a record; the rest are read from its recipe.
PROVEN = tuple(f for axis in ("model", "quality-class", "topology", "runtime-base")
               for f in AXES[axis] if "." in f and not f.startswith(("hardware.", "engine.env")))


class Difference(Frozen):
    axis: str
    field: str
    a: Any = None
    b: Any = None
    allowed: bool = Field(description="named by --delta")


class Comparability(Frozen):
    """The comparability verdict: every differing field, and the axes that refuse it."""

    comparable: bool
    deltas: list[str] = Field(description="what --delta named")
    differences: list[Difference]
    refused_axes: list[str] = Field(description="axes that differ without being named")

    def refusal(self) -> Refused:
        fields = ", ".join(f"{d.field} ({_short(d.a)} vs {_short(d.b)})"
                           for d in self.differences if not d.allowed)
        return Refused(f"not comparable: {', '.join(self.refused_axes)} differ: {fields}",
                       hint="name what is meant to differ with --delta AXIS or --delta "
                            "FIELD (docs/measurement.md, 'Comparability')")


def side_fields(recipe: Recipe, identity: ResolvedIdentity | None = None) -> dict[str, Any]:
    """Every field a comparison looks at, for one side: the recipe's declared values,
    with what the resolver proved (a record) in their place."""
    declared = declared_values(recipe)
    out: dict[str, Any] = {f: declared.get(f) for axis in ("model", "quality-class",
                                                           "topology", "runtime-base")
                           for f in AXES[axis] if f in declared}
    if identity is not None:
        out.update({f: identity.value(f) for f in PROVEN
                    if f in identity.fields and identity.value(f) is not None})
    b, q = recipe.benchmark, recipe.quality
    out.update({
        "hardware.device": recipe.hardware.device, "hardware.count": recipe.hardware.count,
        "engine.env": dict(sorted(recipe.engine.env.items())),
        "benchmark.api": b.api, "benchmark.max_tokens": b.max_tokens,
        "benchmark.suites": [(s.name, s.sha256, s.max_tokens) for s in b.suites],
        "benchmark.concurrency": b.concurrency, "benchmark.temperature": b.temperature,
        "benchmark.top_p": b.top_p, "benchmark.seed": b.seed,
        "benchmark.request_extra": b.request_extra,
        "benchmark.allow_prefix_reuse": b.allow_prefix_reuse,
        "benchmark.metric": b.metric.value, "benchmark.window": b.window,
        "quality.contract": q.contract.value, "quality.teacher": q.teacher,
        "quality.gates": [g.model_dump(mode="json", by_alias=True) for g in q.gates],
    })
    out.update({f"engine.args.{k}": v for k, v in recipe.engine.args.items()
                if k not in DERIVED_ARGS})
    out["engine.custom_args"] = list(recipe.engine.custom_args)
    return out


def axis_of(field: str) -> str:
    for axis, fields in AXES.items():
        if field in fields:
            return axis
    return ENGINE_ARGS


def known_names() -> set[str]:
    return {*AXES, ENGINE_ARGS, *(f for fs in AXES.values() for f in fs)}


def check_deltas(deltas: Sequence[str]) -> None:
    """One clear error for a --delta that names nothing a comparison looks at."""
    for name in deltas:
        if name not in known_names() and not name.startswith(("engine.args.",
                                                               "engine.custom_args")):
            raise InvalidInput(f"--delta {name}: not an axis or a field of a comparison",
                               hint="axes: " + ", ".join([*AXES, ENGINE_ARGS])
                                    + "; or a field such as precision.kv_cache or "
                                      "engine.args.max_num_seqs")


def compare_fields(a: Mapping[str, Any], b: Mapping[str, Any],
                   deltas: Sequence[str]) -> Comparability:
    """The verdict on two sides' fields (side_fields); `deltas` as --delta gave them."""
    check_deltas(deltas)
    names = sorted(set(a) | set(b))
    diffs = [Difference(axis=axis_of(n), field=n, a=a.get(n), b=b.get(n),
                        allowed=_named(n, deltas)) for n in names if a.get(n) != b.get(n)]
    refused = sorted({d.axis for d in diffs if not d.allowed})
    return Comparability(comparable=not refused, deltas=list(deltas), differences=diffs,
                         refused_axes=refused)


def outcome_fields(outputs: Iterable[tuple[str, tuple[int, ...]]]) -> dict[str, Any]:
    """The quality outcome a run gave: its token ids per prompt (an `outputs` field)."""
    return {"outputs": sorted(outputs)}


def _named(field: str, deltas: Sequence[str]) -> bool:
    if field in deltas or axis_of(field) in deltas:
        return True
    # a named quality class lets its quality outcome differ: another KV precision gives
    # other tokens, and is judged by another contract
    return (axis_of(field) == "quality-outcome"
            and any("quality-class" in (d, axis_of(d)) for d in deltas))


def _short(value: Any) -> str:
    text = "-" if value is None else str(value)
    return text if len(text) <= 40 else text[:37] + "..."
