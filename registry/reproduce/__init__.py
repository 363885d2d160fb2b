"""`registry reproduce`: re-run a sealed record and judge the new run against it.

record ► recipe (the sealed one, or `--recipe`) ► plan ► environment check (refused on
drift unless allowed) ► run ► seal (parent = the record) ► verdicts on identity,
contract and performance, each re-derived from the two records' raw data.
The rules are in docs/reproduce.md.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from registry.base.confine import inside
from registry.base.hashing import Progress
from registry.base.model import Frozen
from registry.errors import InvalidInput, Refused
from registry.executor.gpu import GpuSummary
from registry.formats.display import short_id
from registry.formats.record import Override, Statement
from registry.formats.rundir import BenchRow, LaunchPlan
from registry.measure.evidence import StartEvidence
from registry.measure.sequential import Looks, looks
from registry.recipe.schema import MetricFormula, Recipe
from registry.reproduce.control import Controlled, Foreseen
from registry.reproduce.environment import EnvironmentCheck, check_environment
from registry.reproduce.judge import (
    NOT_JUDGED,
    ContractVerdict,
    IdentityVerdict,
    PerformanceVerdict,
    contract_verdict,
    identity_verdict,
    judge_rows,
    performance_verdict,
)
from registry.reproduce.launcher import Restored, place, restore
from registry.reproduce.why import one_start_held
from registry.store.home import Home

if TYPE_CHECKING:
    from registry.contracts.sealed import SealedRun
    from registry.executor.engine import Launcher
    from registry.executor.run import Hooks
    from registry.reproduce.control import ControlStart
    from registry.store.writer import SealedRecord

__all__ = ["Reproduction", "reproduce", "stored_suites", "suite_folder"]


class Reproduction(Frozen):
    original: str = Field(description="the record reproduced")
    recipe: str = Field(description="`record` (its sealed recipe) or the --recipe file")
    plan: LaunchPlan
    environment: EnvironmentCheck
    dry_run: bool = False
    run_dir: str | None = None
    record: str | None = Field(None, description="the new record (parent = original)")
    identity: IdentityVerdict | None = None
    contract: ContractVerdict | None = None
    performance: PerformanceVerdict | None = None
    verification: str | None = Field(None, description="the signed attestation of the verdict")
    controlled: Controlled | None = Field(None, description="--control: the starts and the "
                                                            "controlled speed verdict")
    host_speed: float | None = Field(None, description="the host speed probe's CPU loop, "
                                     "sealed time / time now (0.8: 20% slower today)")
    gpu: GpuSummary | None = Field(None, description="the new run's GPU samples, summarised")
    foreseen: list[Foreseen] | None = Field(None, description="--control --dry-run: what the "
                                            "planned starts can decide, per suite")
    looks: Looks | None = Field(None, description="--control: when the verdict is looked at "
                                "(--starts, --max-starts, --budget-minutes) and each look's level")
    not_judged: list[str] = Field(default_factory=list, description="checks with nothing to "
                                  "judge (e.g. no unflagged sealed decode row): neither "
                                  "passed nor failed")
    passed: bool = Field(description="no check failed or was undecided, and one passed")


def reproduce(home: Home, prefix: str, *, recipe_path: Path | None = None,
              models_dir: Path | None = None, out_dir: Path | None = None,
              allow_env_drift: bool = False, min_performance: float = 0.95,
              max_rounds: int = 5, dry_run: bool = False, hooks: Hooks | None = None,
              progress: Progress | None = None, control: str | None = None,
              starts: int = 2, launcher: Launcher | None = None,
              sealed: Mapping[str, str] | None = None, max_starts: int | None = None,
              budget_minutes: float | None = None) -> Reproduction:
    """Reproduce record `prefix`; `hooks` are the executor's progress callbacks; with
    `control` (a record, or `teacher`: the lane's), `starts` starts of each alternate,
    except those `sealed` (run directory name -> record) holds: an earlier attempt
    sealed them, and they are taken as they are (the fleet's retried jobs). With
    `max_starts` above `starts` the pairs go on one at a time until the verdict is decided,
    `max_starts` a side were run, or `budget_minutes` passed (docs/reproduce.md)."""
    from registry.contracts.sealed import load_sealed, sealed_run
    from registry.executor.container import engine_for_plan
    from registry.executor.run import Hooks as RunHooks
    from registry.executor.run import run
    from registry.store.query import sealed_statement

    if min_performance < 0:
        raise InvalidInput(f"--min-performance {min_performance}: must be 0 or more")
    if max_rounds < 1:
        raise InvalidInput(f"--rounds {max_rounds}: must be 1 or more")
    plan = looks(starts, max_starts, budget_minutes)
    rid, statement = sealed_statement(home, prefix)
    original = sealed_run(home, rid, statement)
    recipe = _recipe(original.id, statement, recipe_path)
    restored = _restored(home, statement, recipe, recipe_path)
    launch = _plan(recipe, models_dir, recipe_path, restored)
    env = check_environment(statement.predicate, recipe, launch, allow_env_drift)
    checked = Reproduction(original=original.id, recipe=str(recipe_path or "record"),
                           plan=launch, environment=env, dry_run=dry_run,
                           passed=not env.refused)
    if env.refused and not dry_run:
        raise Refused(f"environment drift since record {short_id(original.id)}: "
                      + "; ".join(_drift_text(env)),
                      hint="restore the environment, or run anyway with --allow-env-drift "
                           "(recorded in the new record)")
    suites = stored_suites(home, recipe) if recipe_path is None else []
    if control is not None:
        return _controlled(home, checked, statement, original, recipe, recipe_path,
                           _control_id(home, control, recipe, original.id), starts, plan,
                           models_dir, out_dir, allow_env_drift, min_performance, hooks,
                           progress, launcher, sealed or {})
    if dry_run:
        return checked
    run_dir = out_dir or Path("runs") / (f"{recipe.name}-reproduce-{short_id(original.id)}-"
                                         f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
    formula, window = _formula(statement, recipe)
    names = [s.name for s in original.bench.suites]

    def more(rows: list[BenchRow]) -> bool:
        """Another round while the speed verdict is undecided and the budget allows."""
        verdict = judge_rows(original.bench.timed_rows, rows, names, formula, window,
                             min_performance, max_rounds)
        return verdict.status == "undecided"

    with suite_folder(suites, recipe_path, restored) as recipe_dir:
        run(recipe, run_dir, recipe_dir=recipe_dir, recipe_file=recipe_path,
            models_dir=models_dir, hooks=replace(hooks or RunHooks(), more=more),
            launcher=launcher or engine_for_plan)
    new = load_sealed(home, _seal(home, run_dir, recipe_path, original.id, env, progress).id)
    performance = one_start_held(
        performance_verdict(original, new, formula, window, min_performance, max_rounds),
        _evidence(home, original), _evidence(home, new))
    done = _judged(checked.model_copy(update={"run_dir": str(run_dir), "record": new.id}),
                   home, statement, original, new, recipe, performance)
    return attest(home, done)


def _control_id(home: Home, given: str, recipe: Recipe, original: str) -> str:
    """The control's record id: `given`, or the lane's teacher for `teacher`."""
    from registry.contracts import teacher_lane
    from registry.contracts.bindings import get_teacher
    from registry.store.query import resolve_id

    if given == "teacher":
        lane = teacher_lane(recipe)
        teacher = get_teacher(home, lane)
        if teacher is None or teacher.source.kind != "record":
            raise InvalidInput(f"--control teacher: lane {lane} has no teacher record",
                               hint="name the control record: --control ID")
        given = teacher.source.ref
    rid = resolve_id(home, given)
    if rid == original:
        raise InvalidInput(f"--control {given}: the record itself cannot be its control",
                           hint="a control is another record run in the same window")
    return rid


def _controlled(home: Home, checked: Reproduction, statement: Statement, original: SealedRun,
                recipe: Recipe, recipe_path: Path | None, control_id: str, starts: int,
                plan: Looks,
                models_dir: Path | None, out_dir: Path | None, allow_env_drift: bool,
                min_performance: float, hooks: Hooks | None,
                progress: Progress | None, launcher: Launcher | None,
                sealed: Mapping[str, str]) -> Reproduction:
    """Record and control in alternating starts, each sealed, judged after each pair from
    the `starts`-th on; stopped when decided, at `plan.most` starts a side, or when the
    budget is spent (registry.measure.sequential)."""
    from registry.contracts.sealed import load_sealed
    from registry.measure.sequential import stop_reason
    from registry.reproduce.control import control_order, foresee, judge_controlled

    control_order(starts)  # checked before anything is loaded

    def order_at(i: int) -> str:  # record, control, control, record, ...
        return control_order(i // 2 + 1)[i]
    control = load_sealed(home, control_id)
    mine, theirs = ([(x.name, x.sha256) for x in run.bench.suites] for run in (original, control))
    if mine != theirs:
        raise InvalidInput(f"control {short_id(control.id)} measured other suites ({theirs}) than "
                           f"record {short_id(original.id)} ({mine})",
                           hint="a control runs the same suites, pinned to the same digests")
    c_statement = _statement(home, control.id)
    c_recipe = _recipe(control.id, c_statement, None)
    c_env = check_environment(c_statement.predicate, c_recipe,
                              _plan(c_recipe, models_dir, None,
                                    _restored(home, c_statement, c_recipe, None)),
                              allow_env_drift)
    if c_env.refused and not checked.dry_run:
        raise Refused(f"environment drift since control {short_id(control.id)}: "
                      + "; ".join(_drift_text(c_env)),
                      hint="restore the environment, or run anyway with --allow-env-drift")
    formula, window = _formula(statement, recipe)
    if checked.dry_run:
        return checked.model_copy(update={"looks": plan, "foreseen": foresee(
            original, control, starts, formula, window, min_performance, plan.each)})
    out = out_dir or Path("runs") / (f"{recipe.name}-controlled-{short_id(original.id)}-"
                                     f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
    sides = {"record": (recipe, recipe_path, original.id, checked.environment),
             "control": (c_recipe, None, control.id, c_env)}
    seen = {run.id: _evidence(home, run) for run in (original, control)}
    done: list[ControlStart] = []
    rows: dict[str, list[BenchRow]] = {}
    began, stopped = time.monotonic(), None
    while stopped is None:  # one pair (a start a side) at a time, judged after each
        for i in range(len(done), len(done) + 2):
            start, timed = _control_start(home, i, order_at(i), sides[order_at(i)], out,
                                          models_dir, hooks, progress,
                                          [s.name for s in original.bench.suites],
                                          formula, window, launcher, sealed)
            done.append(start)
            rows[start.record] = timed
            seen[start.record] = _evidence(home, load_sealed(home, start.record))
        performance, controlled = judge_controlled(original, control, done, rows, formula,
                                                   window, min_performance, seen, plan.each)
        stopped = stop_reason(performance.status != "inconclusive", len(done) // 2, plan,
                              time.monotonic() - began)
    controlled = controlled.model_copy(update={"stopped": stopped, "max_starts": plan.most,
                                               "look_level": plan.each})
    first = load_sealed(home, next(s.record for s in done if s.side == "record"))
    judged = _judged(checked.model_copy(update={"run_dir": str(out), "record": first.id,
                                                "controlled": controlled, "looks": plan}),
                     home, statement, original, first, recipe, performance)
    return attest(home, judged)


def _evidence(home: Home, run: SealedRun) -> list[StartEvidence]:
    """A sealed record's starts' disturbance evidence (one start or several)."""
    from registry.reproduce.host import starts_evidence

    return starts_evidence(home, _statement(home, run.id), run.bench.timed_rows, single=True)


def _control_start(home: Home, i: int, side: str,
                   what: tuple[Recipe, Path | None, str, EnvironmentCheck], out: Path,
                   models_dir: Path | None, hooks: Hooks | None, progress: Progress | None,
                   names: list[str], formula: MetricFormula, window: int,
                   launcher: Launcher | None, sealed: Mapping[str, str]
                   ) -> tuple[ControlStart, list[BenchRow]]:
    """One fresh engine start of the record's or the control's recipe, sealed with the
    record it re-runs as parent (or the record `sealed` names for its run directory)."""
    from registry.contracts.sealed import load_sealed
    from registry.executor.container import engine_for_plan
    from registry.executor.run import run
    from registry.reproduce.control import ControlStart, run_dir_of, start_figures

    recipe, recipe_path, parent, env = what
    run_dir = run_dir_of(out, i, side)
    rid = sealed.get(run_dir.name)
    if rid is None:
        suites = stored_suites(home, recipe) if recipe_path is None else []
        restored = _restored(home, _statement(home, parent), recipe, recipe_path)
        with suite_folder(suites, recipe_path, restored) as recipe_dir:
            run(recipe, run_dir, recipe_dir=recipe_dir, recipe_file=recipe_path,
                models_dir=models_dir, hooks=hooks, launcher=launcher or engine_for_plan)
        rid = _seal(home, run_dir, recipe_path, parent, env, progress).id
    rows = load_sealed(home, rid).bench.timed_rows
    return ControlStart(start=i, side=side, record=rid, run_dir=str(run_dir),
                        figures=start_figures(i, side, rid, rows, names, formula,
                                              window)), rows


def _statement(home: Home, rid: str) -> Statement:
    from registry.store.query import sealed_statement

    return sealed_statement(home, rid)[1]


def attest(home: Home, done: Reproduction) -> Reproduction:
    """Seal a judged reproduction's verdict as a signed verification attestation."""
    from registry.reproduce.attestation import reproduction_statement
    from registry.store.query import sealed_statement
    from registry.store.verifications import seal_verification
    from registry.store.writer import ready_signer

    assert done.record is not None
    signer = ready_signer(home)
    _, new = sealed_statement(home, done.record)
    stored = seal_verification(home, reproduction_statement(done, new, signer[0]), signer)
    return done.model_copy(update={"verification": stored.id})


def _judged(checked: Reproduction, home: Home, statement: Statement, original: SealedRun,
            new: SealedRun, recipe: Recipe, performance: PerformanceVerdict) -> Reproduction:
    from registry.reproduce.host import gpu_summary, host_speed

    identity = identity_verdict(original, new)
    now = _statement(home, new.id)
    contract = contract_verdict(home, _contract(statement, recipe), original, new, recipe)
    judged = {"identity": (identity.judged, identity.passed),
              "contract": (contract.judged, contract.passed),
              "performance": (performance.status != NOT_JUDGED, performance.passed)}
    counted = [ok for was, ok in judged.values() if was]
    return checked.model_copy(update={
        "identity": identity, "contract": contract, "performance": performance,
        "host_speed": host_speed(home, statement, now), "gpu": gpu_summary(home, now),
        "not_judged": [name for name, (was, _) in judged.items() if not was],
        "passed": bool(counted) and all(counted)})


def _recipe(rid: str, statement: Statement, recipe_path: Path | None) -> Recipe:
    from registry.recipe import load_recipe

    if recipe_path is not None:
        return load_recipe(recipe_path)
    if statement.predicate.recipe is None:
        raise InvalidInput(f"record {short_id(rid)} carries no recipe to rebuild the run from",
                           hint="give the recipe with --recipe FILE")
    return Recipe.model_validate(statement.predicate.recipe)


def stored_suites(home: Home, recipe: Recipe) -> list[tuple[str, Path]]:
    """(relative path, stored object) of each suite the record sealed, found in the
    object store by its pinned digest; one clear error when one is not there."""
    from registry.store.objects import ObjectStore

    store = ObjectStore(home.objects)
    out = []
    for spec in recipe.benchmark.suites:
        stored = store.path(spec.sha256) if spec.sha256 else None
        if stored is None or not stored.is_file():
            raise InvalidInput(f"suite {spec.name}: the record does not carry its prompts "
                               f"(sha256 {spec.sha256})",
                               hint="give the recipe with --recipe FILE; its suites are "
                                    "read beside it and checked against the pin")
        if spec.path and not Path(spec.path).is_absolute() and "$" not in spec.path:
            out.append((spec.path, stored))
    return out


@contextmanager
def suite_folder(suites: list[tuple[str, Path]], recipe_path: Path | None,
                 launcher: Restored | None = None) -> Iterator[Path]:
    """Where the run reads its suites: beside `--recipe`, else a temp folder holding the
    suites the record sealed (and its launcher, restored: registry/reproduce/launcher.py)."""
    if recipe_path is not None:
        yield recipe_path.parent
        return
    with tempfile.TemporaryDirectory(prefix="registry-reproduce-") as tmp:
        for path, stored in suites:
            target = inside(Path(tmp), path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(stored.read_bytes())
        if launcher is not None:
            place(launcher, Path(tmp))
        yield Path(tmp)


def _restored(home: Home, statement: Statement, recipe: Recipe,
              recipe_path: Path | None) -> Restored | None:
    """The record's launcher, where its recipe has one and no --recipe gives it."""
    if not recipe.engine.launcher or recipe_path is not None:
        return None
    return restore(home, statement, recipe)


def _plan(recipe: Recipe, models_dir: Path | None, recipe_path: Path | None,
          restored: Restored | None = None) -> LaunchPlan:
    from registry.executor.engine import free_port
    from registry.executor.plan import preview

    if recipe_path is not None or restored is None:
        return preview(recipe, port=free_port(), models_dir=models_dir, cwd=Path.cwd(),
                       recipe_dir=recipe_path.parent if recipe_path else None)
    with tempfile.TemporaryDirectory(prefix="registry-reproduce-") as tmp:
        place(restored, Path(tmp))
        return preview(recipe, port=free_port(), models_dir=models_dir, cwd=Path.cwd(),
                       recipe_dir=Path(tmp))


def _drift_text(env: EnvironmentCheck) -> list[str]:
    return [f"{f.name} was {f.sealed!r}, is {f.now!r}" for f in env.facts if f.drifted]


def _seal(home: Home, run_dir: Path, recipe_path: Path | None, parent: str,
          env: EnvironmentCheck, progress: Progress | None) -> SealedRecord:
    from registry.seal import seal_run

    reason = f"environment drift allowed with --allow-env-drift reproducing {short_id(parent)}"
    allowed = [Override(field=f"environment.{f.name}", reason=reason, declared=f.sealed,
                        resolved=f.now) for f in env.facts if f.drifted]
    return seal_run(run_dir, home=home, recipe_path=recipe_path, parent=parent,
                    allowed=allowed, progress=progress)


def _formula(statement: Statement, recipe: Recipe) -> tuple[MetricFormula, int]:
    """The record's named decode-rate formula and window (from its results, else its
    recipe, else the new one)."""
    results = statement.predicate.results
    if results:
        return MetricFormula(results[0].formula), results[0].window
    sealed = statement.predicate.recipe
    b = Recipe.model_validate(sealed).benchmark if sealed else recipe.benchmark
    return b.metric, b.window


def _contract(statement: Statement, recipe: Recipe) -> str:
    contract = statement.predicate.contract
    return contract.name if contract else recipe.quality.contract.value

