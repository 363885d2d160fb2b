"""`registry seal RUN_DIR` and `registry import CAPSULE_DIR`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.errors import UsageError
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.base.hashing import Progress

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
    allow_unproven: Annotated[str | None, typer.Option(
        "--allow-unproven", metavar="REASON", show_default=False,
        help="Seal a run whose evidence proves nothing (no engine start in the log, every "
             "identity field unresolved), marked unproven with this reason.")] = None,
    again: Annotated[bool, typer.Option(
        "--again", help="Seal a run that was sealed before as a new record (default: say "
                        "so and return that record).")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Resolve, hash, sign and commit a finished run as a record; print its id.

    Example: registry seal runs/tiny-bf16-kv-20260726T2150Z --recipe recipes/tiny-bf16-kv.toml
    """
    from registry.cli.output import console, print_json
    from registry.seal import seal_run

    allowed = _allowed(allow_mismatch, reason)
    with hashing(run_dir, json) as progress:
        sealed = seal_run(run_dir, home=find(home), recipe_path=recipe,
                          allow_mismatch=allowed, parent=parent, progress=progress,
                          allow_unproven=allow_unproven, again=again)
    if json:
        print_json(sealed)
        return
    console.print(sealed.id, highlight=False)
    if sealed.already:
        console.print(f"already sealed: this run's engine log and rows are record "
                      f"{short_id(sealed.id)}'s (registry seal --again makes another)",
                      style="yellow", highlight=False)
        return
    if allow_unproven is not None:
        console.print(f"marked unproven: {allow_unproven}", style="bold red", highlight=False)
    console.print(f"{sealed.summary}\n{sealed.artifacts} artifacts, {sealed.bytes:,} bytes, "
                  f"ledger commit {short_id(sealed.ledger_commit)}", highlight=False, style="dim")
    for line in sealed.measurement:
        console.print(line, highlight=False)


PathOpt = Annotated[Path | None, typer.Option(show_default=False)]


def import_(
    capsule: Annotated[Path, typer.Argument(show_default=False,
                                            help="Lab capsule (or, with --each, a folder).")],
    each: Annotated[bool, typer.Option(
        "--each", help="Import every subfolder of CAPSULE as a capsule.")] = False,
    recipe: RecipeOpt = None,
    allow_mismatch: AllowOpt = None,
    reason: ReasonOpt = None,
    log: Annotated[Path | None, typer.Option(
        "--log", show_default=False, help="The engine log, inside the capsule.")] = None,
    bench: Annotated[Path | None, typer.Option(
        "--bench", show_default=False, help="The raw rows, inside the capsule.")] = None,
    manifest: Annotated[Path | None, typer.Option(
        "--manifest", show_default=False, help="The sha256 manifest, inside the capsule.")] = None,
    checkpoint: Annotated[Path | None, typer.Option(
        "--checkpoint", show_default=False,
        help="The checkpoint (GGUF, directory or config.json) the run loaded: the only file "
             "outside the capsule an import reads.")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Seal a lab capsule: verify its manifest, one record per arm, results re-derived.

    Example: registry import tests/data/lab/laguna-b70-record
    """
    from registry.cli.importing import print_folder, print_records
    from registry.cli.output import print_json
    from registry.importer.capsule import Options, import_capsule
    from registry.importer.folder import import_folder

    options = Options(recipe_path=recipe, allow_mismatch=_allowed(allow_mismatch, reason),
                      log=log, bench=bench, manifest=manifest, checkpoint=checkpoint)
    if each:
        if log or bench or manifest or checkpoint:
            raise UsageError("--log, --bench, --manifest and --checkpoint name one capsule's "
                             "files",
                             hint="import that capsule on its own")
        with stepping(capsule, json) as step:
            done = import_folder(capsule, home=find(home), options=options, step=step)
        print_json(done) if json else print_folder(done)
        if done.failed:
            from registry.cli.exits import leave, raised

            leave(raised(done.failed[0]))
        return
    with hashing(capsule, json) as progress:
        records = import_capsule(capsule, home=find(home), options=options,
                                 progress=progress)
    print_json(records) if json else print_records(records)


@contextmanager
def stepping(folder: Path, quiet: bool) -> Iterator[Callable[[str], None] | None]:
    """A progress bar over the capsules of a folder, on a terminal and without --json."""
    from registry.cli.output import err_console
    from registry.cli.output import quiet as not_a_tty

    if quiet or not_a_tty() or not folder.is_dir():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    total = sum(1 for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    columns = ("importing", BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"))
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("", total=total)
        started = False

        def step(name: str) -> None:
            nonlocal started
            if started:
                bar.advance(task)
            started = True
            bar.update(task, description=name)

        yield step
