"""`registry credit add|list`: contributor credit as signed facts of the ledger
(registry/publish/credits.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.app import new_app
from registry.cli.options import HomeOpt, Json, find

if TYPE_CHECKING:
    from registry.publish.credits import StoredCredit

credit_app = new_app("Contributor credit: signed facts, each status derived from evidence.")


def register(app: typer.Typer) -> None:
    app.add_typer(credit_app, name="credit")


@credit_app.command("add")
def credit_add(
    file: Annotated[Path, typer.Argument(
        show_default=False, help="TOML of [[contributor]] entries, each stating its status.")],
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Sign and commit one credit fact per contributor: its intake (right to submit,
    license, patch sha256), provenance split and stated status. Refused (exit 6,
    nothing written) when the evidence does not reach a stated status: a
    validated-boost needs an A/B verification this ledger holds, decided faster;
    integrated also needs its patch in the record named as included_in.

    Example: registry credit add contributors.toml
    """
    from registry.cli.output import print_json
    from registry.publish.credits import add_credits

    added = add_credits(find(home), file)
    if json:
        print_json(added)
        return
    for c in added:
        typer.echo(f"{c.fact.contributor}: {c.fact.status} (credit {c.id[:16]})")


@credit_app.command("list")
def credit_list(home: HomeOpt = None, json: Json = False) -> None:
    """Every credit fact of the ledger, each re-derived from the evidence as it is now:
    `stands` is false when the evidence no longer reaches the stated status.

    Example: registry credit list --json
    """
    from registry.cli.output import print_json
    from registry.publish.credits import credits

    found = credits(find(home))
    print_json(found) if json else _print(found)


def _print(found: list[StoredCredit]) -> None:
    from registry.cli.output import console, table

    if not found:
        console.print("no credit facts in this ledger", highlight=False)
        return
    console.print(table("credit facts", ["contributor", "stated", "derived", "stands", "id",
                                         "why"],
                        [[c.fact.contributor, c.fact.status, c.derived,
                          "yes" if c.stands else "no", c.id[:16], c.reason] for c in found]))
