"""`registry verify`: the keyring, the whole signed history, then each record."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.errors import UsageError
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.store.verify import VerifyReport


def register(app: typer.Typer) -> None:
    app.command()(verify)


def verify(
    record: Annotated[str | None, typer.Argument(
        show_default=False, help="Record id or prefix.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Verify every record.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Check the keyring and the whole signed history, then each record: id, signature
    by a trusted key, artifacts, ledger files and index row.

    Exit 0 verified, 1 something is wrong (the part is named), 3 could not verify.

    Example: registry verify 3f2a9c --json
    """
    from registry.cli.exits import leave, verified, with_code
    from registry.cli.output import print_json
    from registry.store.verify import verify_records

    if (record is None) == (not all_):
        raise UsageError("give a record id or --all (not both)", hint="registry verify --all")
    report = verify_records(find(home), None if all_ else record)
    code = verified(report)
    if json:
        print_json(with_code(report, code))
    else:
        _print(report, code)
    leave(code)


def _print(report: VerifyReport, code: int) -> None:
    """One line per record (plain lines: 10,000 of them through rich took seconds)."""
    from registry.cli.output import say

    for problem in report.ledger:
        say((f"FAILED {problem.part}: {problem.detail}", "red"))
    for check in report.records:
        signer = f"signer {short_id(check.signer)}" if check.signer else "no trusted signer"
        say((f"{'ok    ' if check.verified else 'FAILED'} {short_id(check.id)}  "
             f"{check.artifacts} artifacts  {signer}", None if check.verified else "red"))
        for p in check.problems:
            say(f"       {p.part}: {p.detail}")
        if check.note:
            say((f"       note: {check.note}", "yellow"))
    for problem in report.attestation_problems:
        say((f"FAILED {problem.part}: {problem.detail}", "red"))
    history = "history ok" if not report.ledger else "history FAILED"
    say((f"{sum(c.verified for c in report.records)}/{len(report.records)} records verified; "
         f"{report.verifications} verifications; keyring v{report.keyring_version or '?'}; "
         f"{history}", None if code == 0 else "red"))
