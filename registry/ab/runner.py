"""`registry ab A B`: the comparability check, then full engine starts of both sides in
ABBA order, each start sealed as a record, then per suite the boost with its interval
over the starts and a verdict, all re-derived from the sealed records' raw rows; with
--max-starts, pair after pair until the verdict is decided (registry.measure.sequential).

A start is a fresh engine: planned, started, measured with the side's suite, torn down
and sealed (registry.executor.run, registry.seal). Nothing else runs in between, so the
two sides share one window of the host's life. The order stays A B B A (it balances a
slow drift at no cost), but the starts are analysed as independent: adjacent starts were
not correlated on the kept H200 starts (docs/measurement.md, "Sequential starts").
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from registry.ab.comparable import Comparability, compare_fields, outcome_fields, side_fields
from registry.ab.result import AbResult, AbStart, SuiteBoost
from registry.ab.sides import Side, load_side, recipe_folder
from registry.errors import ExitCode, InvalidInput, RegistryError
from registry.formats.rundir import BenchRow, LaunchPlan
from registry.measure.evidence import StartEvidence
from registry.measure.metrics import formula_text
from registry.measure.sequential import looks, stop_reason
from registry.measure.starts import LEVEL, NOISE_PCT, StartFigure, alternating, start_figure
from registry.recipe.schema import Recipe
from registry.reproduce.why import explain_boost
from registry.store.home import Home

if TYPE_CHECKING:
    from registry.base.hashing import Progress
    from registry.executor.engine import Launcher
    from registry.executor.run import Hooks


class NotComparable(RegistryError):
    """Two sides that differ on an axis nobody named: no boost between them."""

    exit_code = ExitCode.INVALID_INPUT


StartHook = Callable[[int, int, str], None]  # (start, of, side) before each start


def ab(home: Home, a: str, b: str, *, deltas: Sequence[str] = (), starts: int = 3,
       models_dir: Path | None = None, out_dir: Path | None = None, dry_run: bool = False,
       level: float = LEVEL, noise_pct: float = NOISE_PCT, hooks: Hooks | None = None,
       on_start: StartHook | None = None, launcher: Launcher | None = None,
       progress: Progress | None = None, sealed: Mapping[str, str] | None = None,
       max_starts: int | None = None, budget_minutes: float | None = None) -> AbResult:
    """Compare `a` and `b` (recipe files or record ids); refused (NotComparable) before
    anything runs when they differ on an axis `deltas` does not name. `sealed` (run
    directory name -> record) holds starts an earlier attempt already sealed: they are
    taken as they are, not run again (the fleet's retried jobs); `progress` gets the
    bytes each seal hashes. With `max_starts` above `starts` the pairs go on one at a time
    until every suite is decided, `max_starts` a side were run, or `budget_minutes`
    passed, each look at the level that keeps the whole run at `level`
    (registry.measure.sequential)."""
    if starts < 2:
        raise InvalidInput(f"--starts {starts}: at least 2 per side (one pair cannot "
                           "measure the spread between starts)")
    if not 0.5 < level < 1:
        raise InvalidInput(f"--level {level}: a confidence between 0.5 and 1")
    plan = looks(starts, max_starts, budget_minutes, level)
    sides = {"A": load_side(home, "A", a), "B": load_side(home, "B", b)}
    verdict = compare_fields(side_fields(sides["A"].recipe, sides["A"].identity),
                             side_fields(sides["B"].recipe, sides["B"].identity), deltas)
    if not verdict.comparable and not dry_run:
        raise _refused(verdict)
    result = AbResult(a=a, b=b, records={k: s.record for k, s in sides.items()},
                      comparability=verdict, order=alternating(starts), starts_per_side=starts,
                      level=level, noise_pct=noise_pct, dry_run=dry_run,
                      max_starts=plan.most, look_level=plan.each,
                      # sides that cannot be compared are said so before models are asked for
                      plans={k: _plan(s, models_dir, dry_run) for k, s in sides.items()}
                      if verdict.comparable else {},
                      verdict="planned" if verdict.comparable else "not comparable")
    if dry_run:
        return result
    out = out_dir or Path("runs") / f"ab-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    done: list[AbStart] = []
    began, stopped = time.monotonic(), None
    while stopped is None:  # one pair (a start a side) at a time, judged after each
        for i in range(len(done), len(done) + 2):
            side = alternating(i // 2 + 1)[i]
            done.append(_start(home, i, sides[side], out, models_dir, hooks, launcher,
                               on_start, 2 * plan.most, progress, sealed or {}))
        judged = judge(home, result, done, sides["A"].recipe)
        stopped = stop_reason(all(s.verdict != "inconclusive" for s in judged.suites),
                              len(done) // 2, plan, time.monotonic() - began)
        if not judged.comparable and len(done) // 2 >= plan.first:
            stopped = "outputs of A and B differ (quality outcome): no boost to decide"
    return attest(home, judged.model_copy(update={
        "order": [s.side for s in done], "starts_per_side": len(done) // 2,
        "stopped": stopped}))


def attest(home: Home, done: AbResult) -> AbResult:
    """Seal a finished A/B as a signed verification attestation naming every start."""
    from registry.ab.attestation import ab_statement
    from registry.store.verifications import seal_verification
    from registry.store.writer import ready_signer

    signer = ready_signer(home)
    stored = seal_verification(home, ab_statement(done, signer[0]), signer)
    return done.model_copy(update={"verification": stored.id})


def _refused(verdict: Comparability) -> NotComparable:
    refused = verdict.refusal()
    return NotComparable(refused.message, hint=refused.hint)


def _plan(side: Side, models_dir: Path | None, dry_run: bool = False) -> LaunchPlan:
    """A side's launch plan; a dry run without models shows `${REGISTRY_MODELS}` as it
    is (nothing is read from it), where a run needs --models."""
    import os

    from registry.executor.engine import free_port
    from registry.executor.plan import MODELS_VAR, preview

    if dry_run and models_dir is None and MODELS_VAR not in os.environ:
        models_dir = Path(f"${{{MODELS_VAR}}}")
    return preview(side.recipe, port=free_port(), models_dir=models_dir, cwd=Path.cwd())


def _start(home: Home, i: int, side: Side, out: Path, models_dir: Path | None,
           hooks: Hooks | None, launcher: Launcher | None, on_start: StartHook | None,
           total: int, progress: Progress | None, sealed: Mapping[str, str]) -> AbStart:
    """One full engine start of a side, sealed (or the record `sealed` names for its run
    directory); its figures from the sealed raw rows."""
    from registry.contracts.sealed import load_sealed
    from registry.executor.container import engine_for_plan
    from registry.executor.run import run
    from registry.seal import seal_run

    run_dir = out / f"{i:02d}-{side.label}"
    rid = sealed.get(run_dir.name)
    if rid is None:
        if on_start:
            on_start(i, total, side.label)
        recipe_file = Path(side.recipe_file) if side.recipe_file else None
        with recipe_folder(home, side) as folder:
            run(side.recipe, run_dir, recipe_dir=folder, recipe_file=recipe_file,
                models_dir=models_dir, hooks=hooks, launcher=launcher or engine_for_plan)
        rid = seal_run(run_dir, home=home, recipe_path=recipe_file, progress=progress).id
    rows = load_sealed(home, rid).bench.timed_rows
    return AbStart(start=i, side=side.label, run_dir=str(run_dir), record=rid,
                   figures=_figures(i, side, rows, rid))


def _figures(i: int, side: Side, rows: list[BenchRow], rid: str) -> list[StartFigure]:
    b = side.recipe.benchmark
    out = []
    for suite in b.suites:
        value, used = start_figure([r for r in rows if r.suite == suite.name], b.metric,
                                   b.window)
        out.append(StartFigure(start=i, side=side.label, value=value, rows=used, record=rid))
    return out


def judge(home: Home, planned: AbResult, done: list[AbStart], recipe: Recipe) -> AbResult:
    """The outcome check and each suite's boost, from the starts' sealed rows (`recipe`:
    side A's, whose suites, formula and window both sides share)."""
    from registry.contracts.sealed import load_sealed

    first = {s.side: load_sealed(home, s.record).bench.rows for s in reversed(done)}
    a_out, b_out = (outcome_fields((r.prompt_id, tuple(r.token_ids)) for r in first[k])
                    for k in ("A", "B"))
    outcome = compare_fields(a_out, b_out, planned.comparability.deltas)
    b = recipe.benchmark
    evidence = [_evidence(home, s) for s in done]
    suites = [_suite(spec.name, k, done, formula_text(b.metric, b.window), planned, evidence)
              for k, spec in enumerate(b.suites)]
    verdicts = {s.verdict for s in suites}
    verdict = verdicts.pop() if len(verdicts) == 1 else "inconclusive"
    if not outcome.comparable:
        verdict = "not comparable"
    return planned.model_copy(update={
        "starts": done, "outcome": outcome, "suites": suites, "verdict": verdict})


def _suite(name: str, k: int, done: list[AbStart], formula: str,
           planned: AbResult, evidence: list[StartEvidence]) -> SuiteBoost:
    """One suite's boost over the undisturbed starts, analysed as independent
    (registry.reproduce.why), each look at the planned level."""
    figures = [s.figures[k] for s in done]
    per = {side: [f.value for f in figures if f.side == side] for side in ("A", "B")}
    means = {side: _geomean(v) for side, v in per.items()}
    why = explain_boost(figures, evidence, level=planned.look_level or planned.level,
                        noise_pct=planned.noise_pct)
    interval = why.interval
    ratio = interval.ratio if interval else None
    a, b = means["A"], means["B"]
    return SuiteBoost(
        suite=name, formula=formula, a=a, b=b,
        a_starts=per["A"], b_starts=per["B"], ratio=ratio, boost_pct=pct(ratio),
        low_pct=pct(interval.low) if interval else None,
        high_pct=pct(interval.high) if interval else None,
        delta_tok_s=b - a if a is not None and b is not None else None, interval=interval,
        verdict=why.status, why=why)


def _evidence(home: Home, start: AbStart) -> StartEvidence:
    """A start's disturbance evidence (its record holds that one start), numbered by its
    place in the order; none kept: an empty one (nothing marks it)."""
    from registry.contracts.sealed import load_sealed
    from registry.reproduce.host import starts_evidence
    from registry.store.query import sealed_statement

    run = load_sealed(home, start.record)
    found = starts_evidence(home, sealed_statement(home, start.record)[1],
                            run.bench.timed_rows, single=True)
    if not found:
        return StartEvidence(start=start.start, rows=0, figure=None, spread=None, stream="")
    return found[0].model_copy(update={"start": start.start})


def pct(ratio: float | None) -> float | None:
    return None if ratio is None else 100 * (ratio - 1)


def _geomean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v]
    return statistics.geometric_mean(kept) if kept else None
