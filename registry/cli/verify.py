"""`registry verify`: the keyring, the whole signed history, then each record."""

from __future__ import annotations

from typing import Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.errors import UsageError


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
    from registry.cli.output import console, print_json
    from registry.store.verify import verify_records

    if (record is None) == (not all_):
        raise UsageError("give a record id or --all (not both)", hint="registry verify --all")
    report = verify_records(find(home), None if all_ else record)
    if json:
        print_json(report)
    else:
        for problem in report.ledger:
            console.print(f"FAILED {problem.part}: {problem.detail}", style="red",
                          highlight=False)
        for check in report.records:
            signer = f"signer {check.signer[:16]}" if check.signer else "no trusted signer"
            console.print(f"{'ok    ' if check.verified else 'FAILED'} {check.id[:16]}  "
                          f"{check.artifacts} artifacts  {signer}", highlight=False,
                          style=None if check.verified else "red")
            for p in check.problems:
                console.print(f"       {p.part}: {p.detail}", highlight=False)
        for p in report.attestation_problems:
            console.print(f"FAILED {p.part}: {p.detail}", style="red", highlight=False)
        history = "history ok" if not report.ledger else "history FAILED"
        console.print(f"{sum(c.verified for c in report.records)}/{len(report.records)} records "
                      f"verified; {report.verifications} verifications; keyring "
                      f"v{report.keyring_version or '?'}; {history}",
                      highlight=False, style=None if report.exit_code == 0 else "red")
    raise typer.Exit(report.exit_code)
