"""`registry review RECORD`: one report and one verdict on a contributed record."""

from __future__ import annotations

from typing import Annotated

import typer

from registry.cli.options import HomeOpt, Json, find

STYLE = {"ok": "green", "reject": "bold red", "needs evidence": "yellow", "note": "dim"}


def register(app: typer.Typer) -> None:
    app.command()(review)


def review(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    no_seal: Annotated[bool, typer.Option(
        "--no-seal", help="Do not sign and commit the verdict as a verification.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Review a record as a maintainer would before accepting it: signature and trust,
    identity re-resolved from its sealed evidence, figures re-derived from its rows (and
    against the lab's published figures), contract judged again, environment,
    measurement. One verdict: accept (exit 0), reject with reasons (exit 1), needs
    evidence (exit 3). The verdict is sealed as a signed verification attestation
    (`registry show` lists it) unless --no-seal or this home's key may not sign.

    Example: registry review 3f2a9c --json
    """
    from rich.text import Text

    from registry.cli.exits import leave, reviewed, with_code
    from registry.cli.output import console, print_json, table
    from registry.formats.display import short_id
    from registry.review import review_record

    report = review_record(find(home), record, seal=not no_seal)
    if json:
        print_json(with_code(report, reviewed(report)))
    else:
        console.print(table(f"review of {short_id(report.id)}", ["part", "status", "detail"], [
            [f.part, Text(f.status.value, style=STYLE[f.status.value]), f.detail]
            for f in report.findings], keep=[True, True, False]))
        console.print(f"verdict: {report.verdict.value}", highlight=False,
                      style=STYLE["ok" if report.verdict.value == "accept" else
                                  report.verdict.value])
        if report.verification:
            console.print(f"verification {short_id(report.verification)} signed and committed",
                          highlight=False)
        elif report.not_sealed:
            console.print(f"not sealed: {report.not_sealed}", highlight=False, style="yellow")
    leave(reviewed(report))
