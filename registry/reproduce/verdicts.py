"""The three verdicts of a reproduction, each re-derived from the two records' raw data.

- identity: every field of kind identity or performance resolves to the same value
  in both records, except the measured KV capacity figures (a fraction of the memory
  free when the engine starts: they differ between any two runs of one recipe).
- contract: the original record's contract; for `bitwise-teacher` the original's own
  rows are the reference (and the lane's teacher too when one is set).
- performance: each suite's median decode rate, by the record's named formula, is at
  least `min_ratio` x the original's, both from the raw token timestamps.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from registry.contracts.sealed import SealedRun
from registry.contracts.teacher import Teacher
from registry.identity import Kind, kind_of
from registry.metrics import suite_metrics
from registry.recipe.schema import ContractName, MetricFormula, Recipe
from registry.store.home import Home
from registry.verdict import Verdict, VerdictStatus

# Measured, not decided: the KV pool is a fraction of the memory free at start.
NOT_DETERMINISTIC = {
    "kv.capacity_tokens": "KV pool size: a fraction of the memory free when the engine starts",
    "kv.memory_gib": "KV memory: a fraction of the memory free when the engine starts",
    "kv.max_concurrency": "follows the KV pool size",
}
DECODE = "decode_tok_s.median"


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FieldChange(Model):
    name: str
    kind: Kind
    original: Any = None
    new: Any = None


class IdentityVerdict(Model):
    passed: bool
    compared: int = Field(description="fields compared")
    differences: list[FieldChange]
    not_compared: dict[str, str] = Field(description="field -> why it is not compared")


class ContractVerdict(Model):
    contract: str
    passed: bool
    verdicts: list[Verdict] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="rows changed after sealing")
    note: str | None = None


class SuitePerformance(Model):
    suite: str
    formula: str
    original: float | None
    new: float | None
    ratio: float | None
    passed: bool
    detail: str


class PerformanceVerdict(Model):
    min_ratio: float
    passed: bool
    suites: list[SuitePerformance]


def identity_verdict(original: SealedRun, new: SealedRun) -> IdentityVerdict:
    judged = {Kind.identity, Kind.performance}
    names = sorted(n for n in {*original.identity.fields, *new.identity.fields}
                   if kind_of(n) in judged)
    skipped = {n: why for n, why in NOT_DETERMINISTIC.items() if n in names}
    for name in names:
        if name not in original.identity.fields:
            skipped[name] = "the original record does not carry this field"
    compared = [n for n in names if n not in skipped]
    changes = [FieldChange(name=n, kind=kind_of(n), original=original.identity.value(n),
                           new=new.identity.value(n))
               for n in compared if original.identity.value(n) != new.identity.value(n)]
    return IdentityVerdict(passed=not changes, compared=len(compared), differences=changes,
                           not_compared=skipped)


def contract_verdict(home: Home, contract: str, original: SealedRun, new: SealedRun,
                     recipe: Recipe) -> ContractVerdict:
    """`recipe` is the one the new run used (its gates, its max_tokens)."""
    from registry.contracts.consistency import self_consistency

    problems = [f"record {r.id[:16]}: bench.json no longer matches its signed digest"
                for r in (original, new) if not r.bench_intact]
    note = None
    if contract == ContractName.bitwise_teacher:
        verdicts = _bitwise(home, original, new, recipe)
    elif contract == ContractName.self_consistency:
        verdicts = [self_consistency([original.bench.rows, new.bench.rows], repeats=2)]
    elif contract == ContractName.semantic_gates:
        verdicts = [_evaluate(recipe, new, None, contract)]
    else:
        verdicts, note = [], "contract none: the outputs are not judged"
    passed = not problems and all(v.status is VerdictStatus.passed for v in verdicts)
    return ContractVerdict(contract=contract, passed=passed, verdicts=verdicts,
                           problems=problems, note=note)


def _bitwise(home: Home, original: SealedRun, new: SealedRun, recipe: Recipe) -> list[Verdict]:
    """The new rows against the original's, suite by suite; then the lane's teacher."""
    from registry.contracts import teacher_lane
    from registry.contracts.bindings import get_teacher
    from registry.contracts.teacher import TeacherSource, binding_axes, teacher_from_rows

    lane = teacher_lane(recipe)
    source = TeacherSource(kind="record", ref=original.id)
    references = [teacher_from_rows(lane, [r for r in original.bench.rows if r.suite == s.name],
                                    binding_axes(original.identity, s.sha256), source)
                  for s in original.bench.suites]
    teacher = get_teacher(home, lane)
    if teacher is not None and teacher.source.ref != original.id:
        references.append(teacher)
    return [_evaluate(recipe, new, t, ContractName.bitwise_teacher) for t in references]


def _evaluate(recipe: Recipe, run: SealedRun, teacher: Teacher | None, contract: str) -> Verdict:
    from registry.contracts import evaluate

    verdict = evaluate(recipe, run.bench.rows, run.identity, teacher, suites=run.bench.suites,
                       contract=contract)
    assert verdict is not None  # only the contract `none` gives no verdict
    return verdict


def performance_verdict(original: SealedRun, new: SealedRun, formula: MetricFormula,
                        window: int, min_ratio: float) -> PerformanceVerdict:
    suites = [_suite(s.name, original, new, formula, window, min_ratio)
              for s in original.bench.suites]
    return PerformanceVerdict(min_ratio=min_ratio, passed=all(s.passed for s in suites),
                              suites=suites)


def _suite(name: str, original: SealedRun, new: SealedRun, formula: MetricFormula,
           window: int, min_ratio: float) -> SuitePerformance:
    def median(run: SealedRun) -> float | None:
        rows = [r for r in run.bench.rows if r.suite == name]
        metric = suite_metrics(rows, formula, window).get(DECODE)
        return metric.value if metric else None

    before, after = median(original), median(new)
    if before is None:
        return SuitePerformance(suite=name, formula=formula.value, original=None, new=after,
                                ratio=None, passed=True,
                                detail="the original has no decode rate to compare with")
    if after is None:
        return SuitePerformance(suite=name, formula=formula.value, original=before, new=None,
                                ratio=None, passed=False,
                                detail=f"no row of the new run reached {window} tokens")
    ratio = after / before
    passed = ratio >= min_ratio
    return SuitePerformance(suite=name, formula=formula.value, original=before, new=after,
                            ratio=ratio, passed=passed,
                            detail=f"median {after:.1f} vs {before:.1f} tok/s: {ratio:.3f} "
                                   f"{'>=' if passed else '<'} {min_ratio}")
