"""`registry run`: plan, launch, benchmark and tear down one recipe."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.progress import Progress

    from registry.executor.run import Hooks, RunResult
    from registry.rundir import LaunchPlan


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
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Run a recipe on the real engine and write its run directory.

    Example: registry run recipes/tiny-bf16-kv.toml --models ~/models --out runs/bf16
    """
    from registry.cli.output import print_json, quiet

    if dry_run:
        launch = _dry_plan(recipe, models, port)
        print_json(launch) if json else _print_plan(launch)
        return
    from registry.executor.run import run_recipe

    out = out or Path("runs") / f"{recipe.stem}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    with _term_as_interrupt():
        if json or quiet():
            result = run_recipe(recipe, out, models_dir=models, timeout=timeout,
                                request_timeout=request_timeout, port=port)
        else:
            with _progress() as bar:
                result = run_recipe(recipe, out, models_dir=models, timeout=timeout,
                                    request_timeout=request_timeout, port=port,
                                    hooks=_hooks(bar))
    print_json(result) if json else _print_result(result)


@contextmanager
def _term_as_interrupt() -> Iterator[None]:
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
    from registry.executor.plan import plan
    from registry.recipe import load_recipe

    recipe = load_recipe(recipe_path)
    # The real cache root is a fresh temp dir made when the run starts.
    cache_root = Path(tempfile.gettempdir()) / "registry-run-cache-XXXXXXXX"
    return plan(recipe, port=port or free_port(), models_dir=models, cwd=Path.cwd(),
                cache_root=cache_root)


def _print_plan(launch: LaunchPlan) -> None:
    import shlex

    from registry.cli.output import console, table

    console.print(f"[bold]platform[/] {launch.platform}   [bold]cwd[/] {launch.cwd}   "
                  f"[bold]address[/] {launch.host}:{launch.port}")
    console.print(shlex.join(launch.argv), highlight=False, soft_wrap=True)
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


def _hooks(bar: Progress) -> Hooks:
    from registry.executor.run import Hooks

    waiting = bar.add_task("starting the engine", total=None)
    tasks: dict[str, object] = {}

    def suite(total: int) -> None:
        bar.update(waiting, visible=False)
        tasks["suite"] = bar.add_task("benchmark", total=total)

    def row(_: object) -> None:
        bar.advance(tasks["suite"])  # type: ignore[arg-type]

    return Hooks(waiting=lambda elapsed: bar.refresh(), suite=suite, row=row)


def _print_result(result: RunResult) -> None:
    from registry.cli.output import console, table

    console.print(f"[bold]{result.recipe}[/] {result.state.value}   run directory {result.run_dir}"
                  f"   engine ready in {result.ready_s:.1f} s   {result.rows} requests")
    for suite, metrics in result.metrics.items():
        console.print(table(f"suite {suite}", ["metric", "value", "unit", "formula", "rows"], [
            [m.name, f"{m.value:.2f}", m.unit, m.formula, m.count] for m in metrics.values()]))
