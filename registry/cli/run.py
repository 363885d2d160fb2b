"""`registry run`: plan, launch, benchmark and tear down one recipe."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import short_id

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from registry.executor.run import RunResult
    from registry.formats.rundir import LaunchPlan
    from registry.store.home import Home
    from registry.store.writer import SealedRecord


def register(app: typer.Typer) -> None:
    app.command("run")(command)


def command(
    recipe: Annotated[Path, typer.Argument(help="Recipe file.", show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the launch plan only.")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run directory (new or empty). Default: runs/<recipe>-<UTC time>.")] = None,
    models: Annotated[Path | None, typer.Option(
        "--models", help="Folder that ${REGISTRY_MODELS} names (default: the variable).")] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", help="Seconds to wait for the engine to serve.")] = 600.0,
    request_timeout: Annotated[float, typer.Option(
        "--request-timeout", help="Seconds one benchmark request may take.")] = 600.0,
    port: Annotated[int | None, typer.Option("--port", help="Engine port (default: a free one).")]
    = None,
    starts: Annotated[int, typer.Option(
        "--starts", min=1, help="Fresh engine starts measured into one record (its figures "
                                "carry the spread between them).")] = 1,
    seal: Annotated[bool, typer.Option(
        "--seal/--no-seal", help="Seal the finished run into the registry home.")] = True,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Run a recipe on the real engine, write its run directory and seal it as a record.

    Example: registry run recipes/tiny-bf16-kv.toml --models ~/models --out runs/bf16
    """
    from registry.cli.output import print_json

    if dry_run:
        launch = _dry_plan(recipe, models, port)
        print_json(launch) if json else print_plan(launch)
        return
    from registry.executor.run import run_recipe

    sealing = sealing_home(home) if seal else None  # before the engine: fail fast
    out = out or Path("runs") / f"{recipe.stem}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    with term_as_interrupt(), progress(json) as bars:
        result = run_recipe(recipe, out, models_dir=models, timeout=timeout,
                            request_timeout=request_timeout, port=port,
                            hooks=bars.hooks if bars else None, starts=starts)
        record = _seal(out, recipe, sealing, bars) if sealing else None
    if json:
        print_json({"run": result, "record": record})
        return
    _print_result(result)
    if record:
        _print_record(record)


def sealing_home(home: Path | None) -> Home:
    """The home a run will be sealed into, with a trusted signing key: checked before
    the engine starts, so a missing home costs nothing."""
    from registry.errors import NotFound
    from registry.store.writer import ready_signer

    try:
        found = find(home)
    except NotFound as e:
        raise NotFound(e.message, hint="create one with `registry init` (and a key with "
                                       "`registry keys init`), or run with --no-seal") from None
    ready_signer(found)
    return found


def _seal(run_dir: Path, recipe: Path, home: Home, bars: Bars | None) -> SealedRecord:
    from registry.errors import RegistryError
    from registry.seal import seal_run

    try:
        return seal_run(run_dir, home=home, recipe_path=recipe,
                        progress=bars.hashed if bars else None)
    except RegistryError as e:
        e.hint = (f"{e.hint}; " if e.hint else "") + (
            f"the run is complete and kept in {run_dir}: seal it with `registry seal {run_dir}`")
        raise


@contextmanager
def term_as_interrupt() -> Iterator[None]:
    """`kill` (SIGTERM) tears the engine down like Ctrl-C instead of orphaning it."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _dry_plan(recipe_path: Path, models: Path | None, port: int | None) -> LaunchPlan:
    from registry.executor.engine import free_port
    from registry.executor.plan import preview
    from registry.recipe import load_recipe

    return preview(load_recipe(recipe_path), port=port or free_port(), models_dir=models,
                   cwd=Path.cwd(), recipe_dir=recipe_path.parent)


def print_plan(launch: LaunchPlan) -> None:
    import shlex

    from registry.cli.output import console, safe, table

    console.print(f"[bold]platform[/] {safe(launch.platform)}   [bold]cwd[/] {safe(launch.cwd)}"
                  f"   [bold]address[/] {safe(launch.host)}:{launch.port}", markup=True)
    console.print(shlex.join(launch.argv), highlight=False, soft_wrap=True)
    if launch.python:  # `python` in the argv is this interpreter (engine.python)
        console.print(f"[bold]engine python[/] {safe(launch.python)}", markup=True)
    console.print(table("environment (on top of the inherited base)", ["variable", "value"],
                        [[k, v] for k, v in sorted(launch.env.items())]))


def _progress() -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from registry.cli.output import err_console

    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), console=err_console,
                    transient=True)


class Bars:
    """One set of progress bars for a run and its seal: the engine start, the suite's
    prompts, then the bytes hashed (whose total is not known in advance)."""

    def __init__(self, bar: Progress) -> None:
        from registry.executor.run import Hooks

        self.bar = bar
        self.tasks: dict[str, TaskID] = {"waiting": bar.add_task("starting the engine",
                                                                 total=None)}
        self.hooks = Hooks(waiting=lambda elapsed: bar.refresh(), suite=self._suite,
                           row=lambda _: bar.advance(self.tasks["suite"]))
        self.bytes = 0

    def _suite(self, total: int) -> None:
        self.bar.update(self.tasks["waiting"], visible=False)
        self.tasks["suite"] = self.bar.add_task("benchmark", total=total)

    def hashed(self, count: int) -> None:
        if "hashing" not in self.tasks:
            for task in self.tasks.values():
                self.bar.update(task, visible=False)
            self.tasks["hashing"] = self.bar.add_task("hashing", total=None)
        self.bytes += count
        self.bar.update(self.tasks["hashing"], description=f"hashing {self.bytes / 1e6:,.1f} MB")


@contextmanager
def progress(quiet: bool) -> Iterator[Bars | None]:
    """Progress bars on a terminal; none under --json or when stderr is not a TTY."""
    from registry.cli.output import quiet as not_a_tty

    if quiet or not_a_tty():
        yield None
        return
    with _progress() as bar:
        yield Bars(bar)


def _print_record(record: SealedRecord) -> None:
    from registry.cli.output import console

    console.print(f"sealed record {record.id}", highlight=False)
    console.print(f"{record.summary}\n{record.artifacts} artifacts, {record.bytes:,} bytes, "
                  f"ledger commit {short_id(record.ledger_commit)}", highlight=False, style="dim")


def _print_result(result: RunResult) -> None:
    from registry.cli.output import console, print_fitted, safe
    from registry.formats.figures import state
    from registry.measure.display import value_text

    console.print(f"[bold]{safe(result.recipe)}[/] {result.state.value}   run directory "
                  f"{safe(result.run_dir)}   engine ready in {result.ready_s:.1f} s   "
                  f"{result.rows} requests", markup=True)
    for suite, metrics in result.metrics.items():
        quality = result.quality.get(suite)
        print_fitted(["metric", "value [95% CI]", "unit", "n"], [
            [m.name, value_text(m, quality), m.unit, str(m.count)] for m in metrics.values()],
            keep=[True, True, True, True], title=f"suite {suite}: measurement {state(quality)}")
        for m in metrics.values():  # below the table: a formula is never cut
            console.print(f"  {m.name} = {m.formula}", highlight=False, soft_wrap=False)
        for reason in quality.reasons if quality else []:
            console.print(reason, highlight=False)
