"""`registry promote RECORD`: a record judged against a promotion policy, signed as one
verification; `registry promote --lab FILE`: a lab's own promotion attestation judged
the way the lab's checker judges it."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import short_id

if TYPE_CHECKING:
    from pydantic import BaseModel

    from registry.promote import Promotion
    from registry.promote.labattestation import LabAttestationJudgement


def register(app: typer.Typer) -> None:
    app.command()(promote)


def promote(
    record: Annotated[str | None, typer.Argument(
        show_default=False, help="Record id or prefix (omit with --lab).")] = None,
    policy: Annotated[Path | None, typer.Option(
        "--policy", help="Promotion policy TOML (default: the lab's, shipped).")] = None,
    lab: Annotated[Path | None, typer.Option(
        "--lab", help="Judge this lab promotion-attestation.json instead of a record.")] = None,
    root: Annotated[Path | None, typer.Option(
        "--root", help="With --lab: the lab repository its paths are inside "
                       "(default: the current directory).")] = None,
    performance: Annotated[Path | None, typer.Option(
        "--performance", help="With --lab: the performance file submitted with it.")] = None,
    no_seal: Annotated[bool, typer.Option(
        "--no-seal", help="Do not sign and commit the result as a verification.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Promote a record: every gate of the policy (the lab's realistic final gate and its
    six attestation gates by default) judged from the record's own rows, suite, contract
    and verifications, each failing closed with its reason. Exit 0 promoted, 1 not.
    The result is signed as a verification (`registry show` lists it) unless --no-seal.

    Example: registry promote 3f2a9c
    Example: registry promote --lab repro/x/promotion-attestation.json --root lab-checkout
    """
    from registry.cli.exits import leave, with_code
    from registry.cli.output import print_json
    from registry.errors import ExitCode, InvalidInput

    if (record is None) == (lab is None):
        raise InvalidInput("give a record, or --lab FILE, not both",
                           hint="registry promote --help")
    if lab is not None:
        from registry.promote.labattestation import judge_lab_attestation

        judged = judge_lab_attestation(lab, root or Path.cwd(), performance)
        result: BaseModel = judged
        passed, show = judged.passed, partial(_print_lab, judged)
    else:
        from registry.promote import promote_record

        done = promote_record(find(home), record or "", policy, seal=not no_seal)
        result, passed, show = done, done.promoted, partial(_print_promotion, done)
    code = ExitCode.OK if passed else ExitCode.FAILED
    print_json(with_code(result, code)) if json else show()
    leave(code)


def _print_promotion(done: Promotion) -> None:
    from rich.text import Text

    from registry.cli.output import console, table

    console.print(table(f"promotion of {short_id(done.id)} under {done.policy}",
                        ["gate", "result", "detail"],
                        [[g.gate.value, Text("passed" if g.passed else "failed",
                                             style="green" if g.passed else "bold red"),
                          g.detail] for g in done.gates]))
    console.print(done.final_gate.prefill_text, highlight=False)
    console.print("promoted" if done.promoted else "not promoted", highlight=False,
                  style="green" if done.promoted else "bold red")
    if done.verification:
        console.print(f"verification {short_id(done.verification)} signed and committed",
                      highlight=False)
    elif done.not_sealed:
        console.print(f"not sealed: {done.not_sealed}", highlight=False, style="yellow")


def _print_lab(judged: LabAttestationJudgement) -> None:
    from registry.cli.output import console, table

    console.print(table(f"lab promotion attestation {judged.path}",
                        ["gate", "stated", "bound evidence"],
                        [[g.name, str(g.stated).lower() if isinstance(g.stated, bool)
                          else repr(g.stated), ", ".join(g.supported_by) or "none"]
                         for g in judged.gates]))
    if judged.passed:
        console.print("passed: every gate true and bound to evidence that re-hashes",
                      highlight=False, style="green")
    else:
        console.print("failed: " + ", ".join(judged.failures), highlight=False,
                      style="bold red")
