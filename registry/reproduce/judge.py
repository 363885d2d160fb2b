"""The three verdicts of a reproduction, each re-derived from the two records' raw data.

- identity: every field of kind identity or performance resolves to the same value
  in both records, except the measured KV capacity figures (a fraction of the memory
  free when the engine starts: they differ between any two runs of one recipe).
- contract: the original record's contract; for `bitwise-teacher` the original's own
  rows are the reference (and the lane's teacher too when one is set).
- performance: per suite, the 95% bootstrap interval of new/original median decode rate
  (the record's named formula, unflagged rows only, registry.measure; not judged when the
  original has fewer than MIN_ROWS unflagged rows: a degraded figure): passed when the
  interval lies at or above `min_ratio`, failed when it lies below, otherwise undecided
  (reproduce runs another round of the suite, up to its budget, then says inconclusive).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.contracts.sealed import SealedRun
from registry.contracts.teacher import Teacher
from registry.formats.display import short_id
from registry.formats.identity import Kind, kind_of
from registry.formats.rundir import BenchRow
from registry.formats.verdict import Verdict, VerdictStatus
from registry.measure.interval import ratio_interval
from registry.measure.metrics import decode_median, decode_rates, formula_text
from registry.measure.quality import MIN_ROWS, assess, usable
from registry.recipe.schema import ContractName, MetricFormula, Platform, Recipe
from registry.store.home import Home

# Measured, not decided: the KV pool is a fraction of the memory free at start.
NOT_DETERMINISTIC = {
    "kv.capacity_tokens": "KV pool size: a fraction of the memory free when the engine starts",
    "kv.memory_gib": "KV memory: a fraction of the memory free when the engine starts",
    "kv.max_concurrency": "follows the KV pool size",
    # llama-server's own per-request rates: speeds, judged by the performance verdict
    "timing.first_prompt_tps": "a speed the log prints (the performance verdict judges speed)",
    "timing.first_eval_tps": "a speed the log prints (the performance verdict judges speed)",
    "timing.mean_eval_tps": "a speed the log prints (the performance verdict judges speed)",
    "timing.first_draft_acceptance": "varies with the drafts a run happens to make",
}


NOT_JUDGED = "not judged"  # a check with nothing to judge: never passed


class FieldChange(Frozen):
    name: str
    kind: Kind
    original: Any = None
    new: Any = None


class IdentityVerdict(Frozen):
    passed: bool
    newly_known: list[FieldChange] = Field(
        default_factory=list, description="fields the original did not know (None when "
                                          "sealed) and the new run does: shown, not drift")
    compared: int = Field(description="fields compared")
    differences: list[FieldChange]
    not_compared: dict[str, str] = Field(description="field -> why it is not compared")

    @property
    def judged(self) -> bool:
        return self.compared > 0


class ContractVerdict(Frozen):
    contract: str
    passed: bool
    verdicts: list[Verdict] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list, description="rows changed after sealing")
    note: str | None = None

    @property
    def judged(self) -> bool:
        """False for contract `none`: no output was judged, so nothing passed."""
        return bool(self.verdicts or self.problems)


class SuitePerformance(Frozen):
    suite: str
    formula: str
    original: float | None = Field(description="sealed median decode rate, unflagged rows")
    new: float | None
    ratio: float | None = Field(description="new / original")
    ratio_low: float | None = Field(None, description="95% bootstrap interval of the ratio")
    ratio_high: float | None = None
    rows_original: int = Field(0, description="unflagged rows behind the original figure")
    rows_new: int = Field(0, description="unflagged rows behind the new figure, all rounds")
    quality_original: str = "not judged"
    quality_new: str = "not judged"
    status: str = Field(description="passed | failed | undecided | inconclusive | not judged "
                                    "(nothing to judge: no unflagged sealed row)")
    slower: bool = Field(False, description="the whole interval lies below 1.0")
    detail: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class PerformanceVerdict(Frozen):
    min_ratio: float
    status: str = Field(description="failed if any suite failed, else inconclusive or "
                                    "undecided if any is, else passed if any suite passed, "
                                    "else not judged")
    passed: bool
    rounds: int = Field(1, description="passes of the suites the new run made")
    max_rounds: int = 1
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
    changed = [FieldChange(name=n, kind=kind_of(n), original=original.identity.value(n),
                           new=new.identity.value(n))
               for n in compared if original.identity.value(n) != new.identity.value(n)]
    # unknown at seal, known now: the record learned a fact; it did not drift from one
    newly = [c for c in changed if c.original is None]
    changes = [c for c in changed if c.original is not None]
    return IdentityVerdict(passed=not changes, compared=len(compared), differences=changes,
                           newly_known=newly, not_compared=skipped)


def contract_verdict(home: Home, contract: str, original: SealedRun, new: SealedRun,
                     recipe: Recipe) -> ContractVerdict:
    """`recipe` is the one the new run used (its gates, its max_tokens)."""
    from registry.contracts.consistency import self_consistency

    problems = [f"record {short_id(r.id)}: bench.json no longer matches its signed digest"
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
    if not passed and verdicts and _compiles_on_gpu(recipe):
        note = COLD_START_NOTE
    return ContractVerdict(contract=contract, passed=passed, verdicts=verdicts,
                           problems=problems, note=note)


# Measured on H200s: 16 cold starts of one compiled record gave 2 distinct token streams,
# 8 eager starts gave 1 (docs/gpu.md).
COLD_START_NOTE = ("a GPU engine that compiles its graphs may pick other kernels at each "
                   "cold start, and so other tokens; enforce_eager = true holds them: "
                   "docs/gpu.md, 'Bitwise outputs across cold starts'")


def _compiles_on_gpu(recipe: Recipe) -> bool:
    return (recipe.hardware.platform is not Platform.cpu
            and not recipe.engine.args.get("enforce_eager"))


def _bitwise(home: Home, original: SealedRun, new: SealedRun, recipe: Recipe) -> list[Verdict]:
    """The new rows against the original's, suite by suite; then the lane's teacher."""
    from registry.contracts import teacher_lane
    from registry.contracts.bindings import get_teacher
    from registry.contracts.teacher import (
        TeacherSource,
        binding_axes,
        kernel_axes,
        teacher_from_rows,
    )

    lane = teacher_lane(recipe)
    source = TeacherSource(kind="record", ref=original.id)
    own = [teacher_from_rows(lane, [r for r in original.bench.rows if r.suite == s.name],
                             binding_axes(original.identity, s.sha256), source,
                             kernel_axes(original.identity))
           for s in original.bench.suites]
    # the original's rows are not the lane's teacher: a lane without one prints no teacher
    mine = f"the original's rows (record {short_id(original.id)})"
    verdicts = [_evaluate(recipe, new, t, ContractName.bitwise_teacher)
                .model_copy(update={"reference": mine}) for t in own]
    teacher = get_teacher(home, lane)
    if teacher is not None and teacher.source.ref != original.id:
        verdicts.append(_evaluate(recipe, new, teacher, ContractName.bitwise_teacher))
    return verdicts


def _evaluate(recipe: Recipe, run: SealedRun, teacher: Teacher | None, contract: str) -> Verdict:
    from registry.contracts import evaluate

    verdict = evaluate(recipe, run.bench.rows, run.identity, teacher, suites=run.bench.suites,
                       contract=contract)
    assert verdict is not None  # only the contract `none` gives no verdict
    return verdict


def performance_verdict(original: SealedRun, new: SealedRun, formula: MetricFormula,
                        window: int, min_ratio: float, max_rounds: int = 1) -> PerformanceVerdict:
    """Judge `new` (every round it ran) against `original`; undecided suites become
    inconclusive once `max_rounds` rounds were run."""
    return judge_rows(original.bench.timed_rows, new.bench.timed_rows,
                      [s.name for s in original.bench.suites], formula, window, min_ratio,
                      max_rounds)


def judge_rows(original: list[BenchRow], new: list[BenchRow], suites: list[str],
               formula: MetricFormula, window: int, min_ratio: float,
               max_rounds: int = 1) -> PerformanceVerdict:
    rounds = 1 + max((r.round for r in new), default=0)
    judged = [_suite(name, [r for r in original if r.suite == name],
                     [r for r in new if r.suite == name], formula, window, min_ratio)
              for name in suites]
    if rounds >= max_rounds:
        judged = [j.model_copy(update={"status": "inconclusive"}) if j.status == "undecided"
                  else j for j in judged]
    status = overall_status(j.status for j in judged)
    return PerformanceVerdict(min_ratio=min_ratio, status=status, passed=status == "passed",
                              rounds=rounds, max_rounds=max_rounds, suites=judged)


def overall_status(statuses: Iterable[str]) -> str:
    """The verdict of all suites: the worst of theirs (none judged: not judged)."""
    seen = set(statuses)
    return next((s for s in ("failed", "inconclusive", "undecided", "passed") if s in seen),
                NOT_JUDGED)


def _suite(name: str, original: list[BenchRow], new: list[BenchRow], formula: MetricFormula,
           window: int, min_ratio: float) -> SuitePerformance:
    qa, qb = assess(original, window), assess(new, window)
    a, b = usable(original, qa), usable(new, qb)
    before, after = decode_median(a, formula, window), decode_median(b, formula, window)
    base = SuitePerformance(suite=name, formula=formula_text(formula, window), original=before,
                            new=after, ratio=None, rows_original=len(a), rows_new=len(b),
                            quality_original=qa.state, quality_new=qb.state,
                            status="undecided", detail="")
    if before is None:
        return base.model_copy(update={
            "status": NOT_JUDGED, "detail": "nothing to judge: the original has no unflagged "
                                            f"decode rate to compare with ({qa.state})"})
    if len(a) < MIN_ROWS:  # a degraded figure: too few rows to hold a new run to it
        return base.model_copy(update={
            "status": NOT_JUDGED, "detail": f"nothing to judge: the original's figure stands "
                                            f"on {len(a)} unflagged rows, fewer than "
                                            f"{MIN_ROWS} (measurement {qa.state})"})
    if after is None:  # bursts may clear in another round; too-short rows never will
        return base.model_copy(update={
            "status": "undecided" if qb.burst else "failed",
            "detail": f"no unflagged row of the new run reached {window} tokens"})
    ratio = after / before
    ci = ratio_interval(decode_rates(b, formula, window), decode_rates(a, formula, window))
    if ci is None:  # one unflagged row on a side: no interval, no decision
        return base.model_copy(update={"ratio": ratio, "detail": f"ratio {ratio:.3f} from "
                                       f"{len(a)} and {len(b)} unflagged rows: too few for an "
                                       "interval"})
    low, high = ci
    status = "passed" if low >= min_ratio else "failed" if high < min_ratio else "undecided"
    detail = (f"median {after:.1f} vs {before:.1f} tok/s: ratio {ratio:.3f}, "
              f"95% interval [{low:.3f}, {high:.3f}] vs floor {min_ratio}")
    return base.model_copy(update={"ratio": ratio, "ratio_low": low,
                                   "ratio_high": high, "status": status, "slower": high < 1.0,
                                   "detail": detail})
