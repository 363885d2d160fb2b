"""`registry teacher set|show|import-lab` and `registry check`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.app import new_app
from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.contracts.bindings import TeacherBinding
    from registry.contracts.check import CheckResult

teacher_app = new_app("Teachers: the reference rows of each lane's bitwise contract.")

Lane = Annotated[str, typer.Option("--lane", show_default=False, help="The lane it teaches.")]


def register(app: typer.Typer) -> None:
    app.add_typer(teacher_app, name="teacher")
    app.command()(check)


@teacher_app.command("set")
def set_(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    lane: Lane,
    suite: Annotated[str | None, typer.Option(
        help="The suite whose rows teach (default: the record's only suite).")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Make a verified, greedy, cold record the teacher of a lane (committed to the ledger).

    Example: registry teacher set 3f2a9c --lane tiny-bf16-exact
    """
    from registry.contracts.bindings import set_teacher

    _print(set_teacher(find(home), record, lane, suite=suite), json)


@teacher_app.command("import-lab")
def import_lab(
    capsule: Annotated[Path, typer.Argument(
        show_default=False, help="Lab capsule holding teacher-token-oracle-*.json and "
                                 "teacher-text-sha256-*.json.")],
    recipe: Annotated[Path, typer.Option(
        "--recipe", show_default=False, help="The lane's recipe: its declared axes bind.")],
    lane: Annotated[str | None, typer.Option(
        help="Lane (default: the recipe's quality.teacher, else its lane).")] = None,
    axis: Annotated[list[str] | None, typer.Option(
        "--axis", show_default=False, help="AXIS=VALUE: an axis the recipe leaves open.")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Import the lab's token-id and text-sha256 oracles as a lane's teacher.

    Example: registry teacher import-lab DIR --recipe recipes/laguna-s21-b70-exact-short-decode.toml
    """
    from registry.contracts.bindings import import_lab_teacher

    binding = import_lab_teacher(find(home), capsule, recipe, lane=lane,
                                 axes=_axes(axis or []))
    _print(binding, json)


@teacher_app.command()
def show(lane: Annotated[str, typer.Argument(show_default=False, help="Lane.")],
         home: HomeOpt = None, json: Json = False) -> None:
    """Show a lane's teacher: source, binding axes, prompts, ledger commit.

    Example: registry teacher show tiny-bf16-exact --json
    """
    from registry.contracts.bindings import show_teacher

    _print(show_teacher(find(home), lane), json)


def check(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    contract: Annotated[str | None, typer.Option(
        show_default=False, help="bitwise-teacher, self-consistency or semantic-gates "
                                 "(default: the record's recipe's).")] = None,
    against: Annotated[list[str] | None, typer.Option(
        "--against", show_default=False, help="Other runs to compare (self-consistency).")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Re-derive a record's quality verdict from its raw rows; the stored one is ignored.

    Exit 0 passed, 1 failed (or rows changed after sealing), 6 refused.

    Example: registry check 3f2a9c --contract self-consistency --against 7b01de
    """
    from registry.cli.exits import checked, leave, with_code
    from registry.cli.output import print_json
    from registry.contracts.check import check_record

    result = check_record(find(home), record, contract=contract, against=against or [])
    if json:
        print_json(with_code(result, checked(result)))
    else:
        _render(result)
    leave(checked(result))


def _axes(terms: list[str]) -> dict[str, str | None]:
    from registry.errors import InvalidInput

    axes: dict[str, str | None] = {}
    for term in terms:
        name, sep, value = term.partition("=")
        if not sep:
            raise InvalidInput(f"--axis {term!r}: expected AXIS=VALUE",
                               hint="e.g. --axis precision.kv_scales=n/a")
        axes[name.strip()] = value.strip() or None
    return axes


def _print(binding: TeacherBinding, json: bool) -> None:
    from registry.cli.output import console, print_json, safe, table

    if json:
        print_json(binding)
        return
    console.print(f"[bold]teacher of {safe(binding.lane)}[/]  {safe(binding.source.kind)} "
                  f"{safe(binding.source.ref)}\nsha256 {safe(binding.sha256)}  ledger commit "
                  f"{safe(binding.ledger_commit)}  {len(binding.prompts)} prompts",
                  highlight=False, markup=True)
    console.print(table("binding axes", ["axis", "value"],
                        [[a, "(none)" if v is None else v] for a, v in binding.axes.items()]))


def _render(result: CheckResult) -> None:
    from registry.cli.output import console, safe, table

    verdict = result.verdict
    stored = result.stored_verdict.status if result.stored_verdict else "none"
    status = verdict.status.value if verdict else "no contract"
    console.print(f"[bold]{safe(result.contract)}[/] on {safe(short_id(result.record))}: "
                  f"[bold]{safe(status)}[/]  (the record stored: {safe(stored)}; not used)",
                  highlight=False, markup=True)
    for problem in result.problems:
        console.print(problem, highlight=False, style="red")
    if verdict is None:
        return
    if verdict.rows:
        console.print(table(verdict.reference, ["row", "prompt", "gate/repeat", "ok", "detail"], [
            [r.index, r.prompt_id, r.gate or r.repeat, "yes" if r.passed else "NO", r.detail]
            for r in verdict.rows]))
    if verdict.checks:
        console.print(table(None, ["check", "ok", "detail"], [
            [c.name, "yes" if c.passed else "NO", c.detail] for c in verdict.checks]))
    for reason in verdict.reasons:
        console.print(f"{verdict.status.value}: {reason}", highlight=False)
