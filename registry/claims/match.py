"""Does a sealed record's identity match a claim's, on the confirmation axes?

The lab confirms a claim only on the same model/checkpoint, quantization, runtime and
patch identity, GPU topology, metric and quality gate. Each axis compares what the
claim states with what the record *resolved* (never what it declared), and says so:
`same`, `differs`, or `unknown` (the claim does not state it, or the record did not
resolve it). Only `same` on every axis confirms. Text is compared by its letters and
digits, case folded ("INT4 W4A16" is in "compressed-tensors w4a16 int4").
"""

from __future__ import annotations

import re
from typing import Any, Literal

from registry.base.model import Frozen
from registry.claims.models import ClaimedIdentity
from registry.formats import display
from registry.formats.metricwords import ClaimMetric
from registry.formats.record import Statement

Outcome = Literal["same", "differs", "unknown"]
AXES = ("model", "quantization", "runtime", "topology", "metric", "quality_gate")


class AxisMatch(Frozen):
    axis: str
    claimed: str | None
    record: str | None
    outcome: Outcome
    rule: str


def _tokens(text: object) -> list[str]:
    return re.findall(r"[a-z0-9]+", str(text).lower())


def _contains(whole: object, part: object) -> bool:
    """Every letters-and-digits token of `part` occurs among those of `whole`, in order
    of appearance not required (token sets)."""
    have = set(_tokens(whole))
    return bool(_tokens(part)) and set(_tokens(part)) <= have


def _axis(axis: str, claimed: object, record: object, same: bool, rule: str) -> AxisMatch:
    if claimed is None or claimed == "":
        return AxisMatch(axis=axis, claimed=None, record=_text(record), outcome="unknown",
                         rule="the claim does not state it")
    if record is None or record == "":
        return AxisMatch(axis=axis, claimed=_text(claimed), record=None, outcome="unknown",
                         rule="the record did not resolve it")
    return AxisMatch(axis=axis, claimed=_text(claimed), record=_text(record),
                     outcome="same" if same else "differs", rule=rule)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def match(identity: ClaimedIdentity, metric: ClaimMetric, record: Statement,
          *, contract_passed: bool | None) -> list[AxisMatch]:
    """Each confirmation axis, claim against `record`; `contract_passed` is what the
    verification re-derived about the record's quality contract (None: not judged)."""
    v = record.predicate.identity.value
    return [_model(identity, v), _quantization(identity, v), _runtime(identity, record),
            _topology(identity, record), _metric(metric, record),
            _gate(identity, record, contract_passed)]


def _model(c: ClaimedIdentity, v: Any) -> AxisMatch:
    if c.checkpoint:
        found = v("model.manifest_sha256") or v("model.revision")
        return _axis("model", c.checkpoint, found, str(found).startswith(c.checkpoint.lower()),
                     "checkpoint digest or revision: the record's starts with the claim's")
    found = v("model.path") or v("model.revision")
    return _axis("model", c.model, found, _contains(found, c.model),
                 "the claim's model name is in the record's model path or revision")


SCHEME = re.compile(r"w(\d+)a(\d+)")
ACTIVATION_BITS = {"fp8": 8, "int8": 8, "fp4": 4, "int4": 4, "float16": 16, "bfloat16": 16,
                   "half": 16, "float32": 32}


def _quantization(c: ClaimedIdentity, v: Any) -> AxisMatch:
    """The claim's words against the record's weights, and a claimed `WxAy` scheme's
    activation half against the record's precision.activations (a record whose activations
    are unresolved neither confirms nor refutes a claimed `A8` / `A16`)."""
    weights, acts = v("precision.weights"), v("precision.activations")
    claimed = SCHEME.search(str(c.quantization or "").lower())
    shown = display.precision(weights, acts)
    if claimed is None or weights is None or SCHEME.search(str(weights).lower()):
        return _axis("quantization", c.quantization, shown, _contains(weights, c.quantization),
                     "the claim's quantization words are all in the record's precision.weights")
    rest = SCHEME.sub(" ", str(c.quantization).lower())
    if acts is None:
        return AxisMatch(axis="quantization", claimed=c.quantization, record=_text(weights),
                         outcome="unknown" if _words_in(weights, rest) else "differs",
                         rule=f"the claim says {claimed.group(0).upper()}; the record did not "
                              "resolve its activation precision")
    same = (_words_in(weights, rest)
            and ACTIVATION_BITS.get(str(acts)) == int(claimed.group(2)))
    return _axis("quantization", c.quantization, shown, same,
                 "the claim's words in precision.weights, its WxAy activation bits those of "
                 "precision.activations")


def _words_in(whole: object, part: str) -> bool:
    return not _tokens(part) or _contains(whole, part)


def _runtime(c: ClaimedIdentity, record: Statement) -> AxisMatch:
    v = record.predicate.identity.value
    name, version, commit = v("engine.name"), v("engine.version"), v("engine.commit")
    engine_src = next((s for s in record.predicate.sources if s.role == "engine"), None)
    diff = engine_src.diff_sha256 if engine_src else None
    dirty = engine_src.dirty if engine_src else None
    found = " ".join(str(x) for x in (name, version, commit) if x) or None
    same = bool(name) and _tokens(c.engine)[:1] == _tokens(name)[:1]
    if c.engine_version:
        same = same and any(str(x).startswith(c.engine_version) for x in (version, commit) if x)
    if c.patch:
        same = same and ((c.patch == "none" and dirty is False) or c.patch == diff)
        found = f"{found} patch={diff or ('none' if dirty is False else '?')}"
    claimed = " ".join(x for x in (c.engine, c.engine_version, c.patch and f"patch={c.patch}")
                       if x) or None
    return _axis("runtime", c.engine and claimed, found, same,
                 "engine name, then version/commit prefix and patch digest when claimed")


def _topology(c: ClaimedIdentity, record: Statement) -> AxisMatch:
    v = record.predicate.identity.value
    tp = v("parallel.tensor")
    host = record.predicate.environment.host_facts()
    names = [a.get("name", "") for a in host.get("accelerators") or []]
    hardware = names[0] if names else v("runtime.device")
    found = f"tp={tp} on {hardware}" if tp is not None and hardware else None
    same = tp == c.tp and _contains(hardware, c.hardware)
    if c.cards is not None and names:
        same = same and len(names) >= c.cards
    claimed = (f"tp={c.tp} on {c.hardware}" if c.tp is not None and c.hardware else None)
    return _axis("topology", claimed, found, same,
                 "same tensor parallelism; the claim's hardware words in the device name")


def _metric(m: ClaimMetric, record: Statement) -> AxisMatch:
    formulas = sorted({s.formula for s in record.predicate.results})
    found = ", ".join(formulas) or None
    return _axis("metric", m.formula, found, m.formula in formulas,
                 "the formula the claim's metric names is the record's decode formula")


def _gate(c: ClaimedIdentity, record: Statement, passed: bool | None) -> AxisMatch:
    contract = record.predicate.contract
    name = contract.name if contract else None
    found = None if name is None else f"{name} " + (
        "passed" if passed else "not passed" if passed is False else "not judged")
    return _axis("quality_gate", c.quality_gate, found,
                 name == c.quality_gate and passed is True,
                 "the record's contract is the claim's gate and the verification passed it")


def confirms(axes: list[AxisMatch]) -> bool:
    return all(a.outcome == "same" for a in axes)
