"""One run: plan, launch, wait, benchmark, tear down, and write the run directory.

Bad input (recipe, suite, variables) is refused before anything is written. Once the
run directory exists, every exit path (engine fault, request timeout, Ctrl-C) tears
the engine down and leaves `status.json` saying `failed` and why; nothing is
reported as a success unless every prompt was measured cleanly.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import Field

from registry.base.canonical import canonical_bytes
from registry.base.files import write_bytes, write_model
from registry.base.model import Frozen
from registry.engines.plugin import engine_for
from registry.errors import EngineFailed, InvalidInput, RegistryError, VerificationFailed
from registry.executor import probe
from registry.executor.client import run_suites
from registry.executor.container import check_digest, engine_for_plan, inspect_image
from registry.executor.engine import (
    Cleanup,
    EngineProcess,
    Launcher,
    base_env,
    engine_env,
    free_port,
)
from registry.executor.environment import gather
from registry.executor.gpu import Sampler
from registry.executor.interpreter import probe as probe_python
from registry.executor.launcher import keep_copy, launcher_facts
from registry.executor.plan import model_path, plan, variables
from registry.executor.profiles import PlatformProfile
from registry.executor.suite import Suite, load_suites
from registry.formats import rundir
from registry.formats.figures import Metric, Quality
from registry.formats.rundir import BenchRow, LaunchPlan, RunState, RunStatus
from registry.measure.metrics import suite_figures
from registry.recipe import load_recipe
from registry.recipe.schema import Recipe


class RunResult(Frozen):
    run_dir: str
    recipe: str
    state: RunState
    reason: str | None = None
    served_model: str | None = None
    ready_s: float | None = None
    rows: int
    metrics: dict[str, dict[str, Metric]] = Field(
        default_factory=dict, description="suite -> metric name -> metric")
    quality: dict[str, Quality] = Field(default_factory=dict, description="suite -> quality")
    cleanup: Cleanup | None = None


@dataclass
class Hooks:
    """Progress callbacks for a front end (the library itself never prints)."""

    waiting: Callable[[float], None] | None = None  # seconds since the engine started
    suite: Callable[[int], None] | None = None  # prompts about to be sent
    # the run directory, its engine ready, before the suite (the fleet tags it there)
    ready: Callable[[Path], None] | None = None
    row: Callable[[BenchRow], None] | None = None
    # Asked after each pass of the suites with every row so far: run another pass on the
    # same engine? (reproduce's adaptive rounds; None: one pass)
    more: Callable[[list[BenchRow]], bool] | None = None


def run_recipe(recipe_path: Path, out_dir: Path, *, models_dir: Path | None = None,
               timeout: float = 600.0, request_timeout: float = 600.0, port: int | None = None,
               cwd: Path | None = None, hooks: Hooks | None = None, starts: int = 1) -> RunResult:
    """Run a recipe file; the run directory is `out_dir` (new or empty)."""
    recipe = load_recipe(recipe_path)
    return run(recipe, out_dir, recipe_dir=recipe_path.parent, recipe_file=recipe_path,
               models_dir=models_dir, timeout=timeout, request_timeout=request_timeout,
               port=port, cwd=cwd, hooks=hooks, starts=starts)


def run(recipe: Recipe, out_dir: Path, *, recipe_dir: Path, recipe_file: Path | None = None,
        models_dir: Path | None = None, timeout: float = 600.0, request_timeout: float = 600.0,
        port: int | None = None, cwd: Path | None = None, hooks: Hooks | None = None,
        platform: PlatformProfile | None = None, launcher: Launcher = engine_for_plan,
        starts: int = 1) -> RunResult:
    """Run a normalized recipe (suite paths relative to `recipe_dir`); `platform`
    overrides the recipe's profile; `launcher` makes the engine (the plan's process);
    `starts` > 1 measures the suite on that many fresh engine starts, one after the
    other, into one run directory (start k's own files under `starts/<k>/`, its rows in
    bench.json's `more_rounds` with `start` = k)."""
    if starts < 1:
        raise InvalidInput(f"--starts {starts}: must be 1 or more")
    suites = load_suites(recipe, recipe_dir, variables(models_dir))
    cache_root = Path(tempfile.mkdtemp(prefix="registry-run-cache-"))
    try:  # planned before anything is written: bad input leaves no run directory
        launch = plan(recipe, platform, port=port or free_port(), models_dir=models_dir,
                      cwd=(cwd or Path.cwd()).resolve(), cache_root=cache_root,
                      recipe_dir=recipe_dir)
        container = _container_facts(launch)
        _new_run_dir(out_dir)
        if container is not None:
            write_model(out_dir / rundir.CONTAINER, container)
        write_bytes(out_dir / rundir.RECIPE_JSON, canonical_bytes(recipe))
        if recipe_file is not None:
            write_bytes(out_dir / rundir.RECIPE_TOML, recipe_file.read_bytes())
        _write_suites(out_dir, suites)
        write_model(out_dir / rundir.LAUNCH, launch)
        write_model(out_dir / rundir.ENVIRONMENT,
                    gather(base_env(launch.platform),
                           probe_python(launch.python, engine_env(launch), launch.engine)))
        result = _execute(recipe, launch, suites, out_dir, timeout, request_timeout,
                          hooks or Hooks(), launcher)
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)
    for k in range(1, starts):
        folder = out_dir / rundir.STARTS / str(k)
        folder.mkdir(parents=True)
        try:
            _one_start(recipe, suites, folder, platform, models_dir, cwd, recipe_dir, timeout,
                       request_timeout, Hooks(waiting=(hooks or Hooks()).waiting), launcher)
        except Exception as e:  # the record's run fails with its start
            _fail(out_dir, f"start {k} of {starts}: {e}")
            raise
        _merge_start(out_dir, folder, k)
    if starts == 1:
        return result
    bench = rundir.read_model(out_dir / rundir.BENCH, rundir.Bench)
    return result.model_copy(update=_figures(recipe, suites, bench.timed_rows))


def _one_start(recipe: Recipe, suites: list[Suite], out_dir: Path,
               platform: PlatformProfile | None, models_dir: Path | None,
               cwd: Path | None, recipe_dir: Path, timeout: float, request_timeout: float,
               hooks: Hooks,
               launcher: Launcher) -> RunResult:
    """One engine start, planned afresh (its own port and cold caches) into `out_dir`."""
    cache_root = Path(tempfile.mkdtemp(prefix="registry-run-cache-"))
    try:
        launch = plan(recipe, platform, port=free_port(), models_dir=models_dir,
                      cwd=(cwd or Path.cwd()).resolve(), cache_root=cache_root,
                      recipe_dir=recipe_dir)
        write_model(out_dir / rundir.LAUNCH, launch)
        return _execute(recipe, launch, suites, out_dir, timeout, request_timeout, hooks,
                        launcher)
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)


def _merge_start(out_dir: Path, folder: Path, k: int) -> None:
    """Start k's rows join the record's bench.json (`start` = k); its own copy goes."""
    bench = rundir.read_model(out_dir / rundir.BENCH, rundir.Bench)
    more = rundir.read_model(folder / rundir.BENCH, rundir.Bench)
    rows = [r.model_copy(update={"start": k}) for r in more.timed_rows]
    write_model(out_dir / rundir.BENCH,
                bench.model_copy(update={"more_rounds": [*bench.more_rounds, *rows]}))
    (folder / rundir.BENCH).unlink()


def _fail(out_dir: Path, reason: str) -> None:
    status = rundir.read_model(out_dir / rundir.STATUS, RunStatus)
    write_model(out_dir / rundir.STATUS, status.model_copy(update={
        "state": RunState.failed, "reason": reason}))


def _container_facts(launch: LaunchPlan) -> rundir.ContainerFacts | None:
    """The image's identity, asked of the runtime before anything is written: an image it
    lacks, or not the pinned one, is refused here."""
    if launch.container is None:
        return None
    facts = inspect_image(launch.container)
    check_digest(facts)
    return facts


def _new_run_dir(out_dir: Path) -> None:
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InvalidInput(f"{out_dir}: already exists and is not empty",
                           hint="a run never overwrites another; choose a new --out")
    out_dir.mkdir(parents=True, exist_ok=True)


def _write_suites(out_dir: Path, suites: list[Suite]) -> None:
    """The prompts exactly as sent: sealed with the run, so a reproduction needs no
    copy of the recipe's folder."""
    (out_dir / rundir.SUITES).mkdir()
    for suite in suites:
        write_bytes(out_dir / rundir.SUITES / f"{suite.name}.jsonl", suite.data)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _preflight(recipe: Recipe, launch: LaunchPlan) -> None:
    """Local checkpoints must exist before an engine is started for them."""
    model = model_path(launch)
    found = (Path(launch.cwd) / model) if model else None
    # a vLLM checkpoint is a folder, a llama.cpp one a GGUF file
    if recipe.model.path and found and not (found.is_file() if engine_for(launch.engine)
                                            .model_is_file else found.is_dir()):
        raise InvalidInput(f"model.path: checkpoint {model} does not exist",
                           hint="build or download it, or point --models at its folder")


def _execute(recipe: Recipe, launch: LaunchPlan, suites: list[Suite], out_dir: Path,
             timeout: float, request_timeout: float, hooks: Hooks,
             launcher: Launcher) -> RunResult:
    status = RunStatus(state=RunState.running, started_at=_now())
    write_model(out_dir / rundir.STATUS, status)
    start = time.monotonic()
    engine = launcher(launch, out_dir / rundir.SERVER_LOG)
    rows: list[BenchRow] = []
    extra: list[BenchRow] = []  # later rounds (reproduce): speed figures only
    served: str | None = None
    ready_s: float | None = None
    reason: str | None = "interrupted"
    try:
        if launch.launcher:
            keep_copy(launch, out_dir / rundir.LAUNCHER_SCRIPT)
        _preflight(recipe, launch)
        engine.start()
        served = engine.wait_ready(timeout, hooks.waiting)
        ready_s = round(time.monotonic() - start, 3)
        _scrape(engine, out_dir / rundir.METRICS_BEFORE)
        if hooks.ready:
            hooks.ready(out_dir)
        if hooks.suite:
            hooks.suite(sum(len(s.prompts) for s in suites))
        before, sampler = probe.sample(), Sampler(out_dir / rundir.GPU_SAMPLES)
        sampler.start()
        try:
            rows, fault = run_suites(engine.base_url, served, recipe.benchmark, suites,
                                     request_timeout=request_timeout, on_row=hooks.row,
                                     engine=recipe.engine.name)
            while (not fault and not any(r.error for r in rows + extra) and hooks.more
                   and hooks.more(rows + extra)):
                more, fault = run_suites(engine.base_url, served, recipe.benchmark, suites,
                                         request_timeout=request_timeout, on_row=hooks.row,
                                         round_=max(r.round for r in rows + extra) + 1,
                                         engine=recipe.engine.name)
                extra += more
        finally:
            sampler.stop()
        write_model(out_dir / rundir.PROBE, probe.Probe(before=before, after=probe.sample()))
        write_model(out_dir / rundir.BENCH, _bench(recipe, served, suites, rows, extra))
        if engine.exit_code() is None:
            try:
                _scrape(engine, out_dir / rundir.METRICS_AFTER)
            except httpx.HTTPError as e:
                fault = fault or f"/metrics after the suite failed: {e}"
        reason = None
        _raise_for(engine, fault, rows + extra)
    except RegistryError as e:
        reason = e.message
        raise
    except Exception as e:
        reason = f"{type(e).__name__}: {e}"
        raise
    finally:
        cleanup = engine.stop()
        if launch.launcher:
            write_model(out_dir / rundir.LAUNCHER,
                        launcher_facts(launch, out_dir / rundir.SERVER_LOG, cleanup.exit_code,
                                       out_dir / rundir.LAUNCHER_SCRIPT))
        if reason is None and not cleanup.clean:
            reason = f"teardown left the port open or processes {cleanup.leftover_pids}"
        state = RunState.complete if reason is None else RunState.failed
        placement = engine.placement.model_dump() if engine.placement else None
        write_model(out_dir / rundir.STATUS, status.model_copy(update={
            "state": state, "reason": reason, "finished_at": _now(), "ready_s": ready_s,
            "cleanup": cleanup.model_dump(), "placement": placement}))
    if state is RunState.failed:  # only an unclean teardown fails a run that got here
        raise EngineFailed(f"{reason}", hint=f"run directory {out_dir} is marked failed")
    return RunResult(run_dir=str(out_dir), recipe=recipe.name, state=state, served_model=served,
                     ready_s=ready_s, rows=len(rows), cleanup=cleanup,
                     **_figures(recipe, suites, rows + extra))


def _raise_for(engine: EngineProcess, fault: str | None, rows: list[BenchRow]) -> None:
    """The run's verdict on what the suite saw (raised; the caller records it)."""
    if engine.exit_code() is not None:
        raise engine.died("the suite")
    if fault:
        raise EngineFailed(f"the suite stopped: {fault}", hint=f"see {engine.log_path}")
    bad = [r for r in rows if r.error]
    if bad:
        raise VerificationFailed(
            f"{len(bad)} of {len(rows)} requests failed; first: {bad[0].prompt_id}: {bad[0].error}",
            hint="bench.json keeps every row with its error")


def _scrape(engine: EngineProcess, path: Path) -> None:
    response = httpx.get(engine.base_url + "/metrics", timeout=30.0)
    response.raise_for_status()
    write_bytes(path, response.content)


def _bench(recipe: Recipe, model: str, suites: list[Suite], rows: list[BenchRow],
           extra: list[BenchRow]) -> rundir.Bench:
    b = recipe.benchmark
    return rundir.Bench(
        api=b.api, model=model,
        params={"temperature": b.temperature, "top_p": b.top_p, "seed": b.seed,
                "concurrency": b.concurrency, "max_tokens": {s.name: s.max_tokens for s in suites},
                "request_extra": b.request_extra},
        suites=[rundir.SuiteRef(name=s.name, sha256=s.sha256, path=s.path, prompts=len(s.prompts))
                for s in suites],
        rows=rows, more_rounds=extra)


def _figures(recipe: Recipe, suites: list[Suite], rows: list[BenchRow]) -> dict[str, Any]:
    b = recipe.benchmark
    figures = {s.name: suite_figures([r for r in rows if r.suite == s.name], b.metric, b.window)
               for s in suites}
    return {"metrics": {name: f.metrics for name, f in figures.items()},
            "quality": {name: f.quality for name, f in figures.items()}}
