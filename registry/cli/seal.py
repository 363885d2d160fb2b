"""`registry seal RUN_DIR` and `registry import CAPSULE_DIR`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.store import HomeOpt, Json, UsageError

if TYPE_CHECKING:
    from registry.hashing import Progress

RecipeOpt = Annotated[Path | None, typer.Option(
    "--recipe", show_default=False, help="Recipe file (default: the run's recipe.json).")]
AllowOpt = Annotated[list[str] | None, typer.Option(
    "--allow-mismatch", show_default=False,
    help="An identity field whose mismatch is accepted (repeat; each needs a --reason).")]
ReasonOpt = Annotated[list[str] | None, typer.Option(
    "--reason", show_default=False, help="Why, for the --allow-mismatch at the same position.")]


def register(app: typer.Typer) -> None:
    app.command()(seal)
    app.command("import")(import_)


def _allowed(fields: list[str] | None, reasons: list[str] | None) -> dict[str, str]:
    fields, reasons = fields or [], reasons or []
    if len(fields) != len(reasons) or not all(r.strip() for r in reasons):
        raise UsageError("each --allow-mismatch FIELD needs its own non-empty --reason TEXT",
                         hint="--allow-mismatch precision.kv_cache --reason 'why it is fine'")
    return dict(zip(fields, reasons, strict=True))


@contextmanager
def hashing(folder: Path, quiet: bool) -> Iterator[Progress | None]:
    """A progress bar over the bytes hashed, on a terminal and without --json."""
    from registry.cli.output import err_console
    from registry.cli.output import quiet as not_a_tty

    if quiet or not_a_tty() or not folder.is_dir():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    columns = ("hashing", BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("hashing", total=total)
        yield lambda n: bar.advance(task, n)


def seal(
    run_dir: Annotated[Path, typer.Argument(show_default=False, help="Run directory.")],
    recipe: RecipeOpt = None,
    allow_mismatch: AllowOpt = None,
    reason: ReasonOpt = None,
    parent: Annotated[str | None, typer.Option(
        show_default=False, help="Record this run reproduces (id or prefix).")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Resolve, hash, sign and commit a finished run as a record; print its id.

    Example: registry seal runs/tiny-bf16-kv-20260726T2150Z --recipe recipes/tiny-bf16-kv.toml
    """
    from registry.cli.output import console, print_json
    from registry.seal import seal_run
    from registry.store.home import find_home

    allowed = _allowed(allow_mismatch, reason)
    with hashing(run_dir, json) as progress:
        sealed = seal_run(run_dir, home=find_home(home), recipe_path=recipe,
                          allow_mismatch=allowed, parent=parent, progress=progress)
    if json:
        print_json(sealed)
        return
    console.print(sealed.id, highlight=False)
    console.print(f"{sealed.summary}\n{sealed.artifacts} artifacts, {sealed.bytes:,} bytes, "
                  f"ledger commit {sealed.ledger_commit[:12]}", highlight=False, style="dim")
    for line in sealed.measurement:
        console.print(line, highlight=False)


def import_(
    capsule: Annotated[Path, typer.Argument(show_default=False, help="Lab record capsule.")],
    recipe: RecipeOpt = None,
    allow_mismatch: AllowOpt = None,
    reason: ReasonOpt = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Seal a lab record capsule: verify its manifest, re-derive its results, sign.

    Example: registry import tests/data/lab/laguna-b70-record
    """
    from registry.cli.output import console, print_json
    from registry.importer import import_capsule
    from registry.measure.report import quality_lines, state
    from registry.store.home import find_home

    allowed = _allowed(allow_mismatch, reason)
    with hashing(capsule, json) as progress:
        done = import_capsule(capsule, home=find_home(home), recipe_path=recipe,
                              allow_mismatch=allowed, progress=progress)
    if json:
        print_json(done)
        return
    i = done.imported
    console.print(done.record.id, highlight=False)
    console.print(f"recipe {done.recipe}\nmanifest: {len(i.verified)} files verified, "
                  f"{len(i.missing)} listed but absent", highlight=False)
    for name in i.missing:
        console.print(f"  absent: {name}", highlight=False)
    for name in i.unlisted:
        console.print(f"  not in the manifest: {name}", highlight=False)
    for suite in done.results:
        for name in ("decode_tok_s.median", "decode_tok_s_other_formula.median"):
            if name in suite.metrics:
                m = suite.metrics[name]
                console.print(f"{suite.suite}: {m.value} {m.unit} = {m.formula} ({m.count} rows)"
                              + ("" if suite.quality and not suite.quality.degraded
                                 else f" ({state(suite.quality)})"), highlight=False)
    for line in quality_lines(done.results):
        console.print(line, highlight=False)
