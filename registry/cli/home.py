"""`registry init` and `registry reindex`: create a home, rebuild its index from the ledger.

`--home DIR` names the home; without it the home is `$REGISTRY_HOME`, else the nearest
`.registry/` above the current directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.errors import UsageError
from registry.formats.display import short_id


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(reindex)


def init(
    directory: Annotated[Path | None, typer.Argument(
        show_default=False,
        help="Project folder; the home is DIR/.registry (default: here).")] = None,
    home: HomeOpt = None,
    pin: Annotated[list[str] | None, typer.Option(
        "--pin", show_default=False,
        help="Join a team: pin this root key id (full 64 digits) and start no keyring of "
             "your own; then `registry remote add` and `registry pull`.")] = None,
) -> None:
    """Create a registry home: objects/, ledger/ (git) and the index. With a signing key,
    the ledger's first keyring makes it the root, and the home pins it; with --pin, the
    home trusts the team's root instead and its ledger comes from a pull.

    Example: registry init
    Example: registry init --pin 3f2a9c41...e0
    """
    import os

    from registry.cli.keys import check_pins, pin_keys, start_keyring
    from registry.cli.output import console
    from registry.store.create import init_home
    from registry.store.home import DIRNAME, ENV_HOME

    if home and directory:
        raise UsageError("give the project folder or --home, not both")
    if directory is not None:  # named here: it wins over $REGISTRY_HOME
        root = directory / DIRNAME
    else:
        root = home or Path(os.environ.get(ENV_HOME) or Path.cwd() / DIRNAME)
    check_pins(pin or [])  # a bad pin is refused before the home is written
    created = init_home(root)
    console.print(f"registry home: {created.root}", highlight=False)
    if pin:
        pin_keys(created, pin, 1)
        console.print(f"pinned root key(s) {', '.join(short_id(k) for k in pin)}: registry remote "
                      "add NAME URL, then registry pull", highlight=False)
        return
    console.print(start_keyring(created), highlight=False)


def reindex(home: HomeOpt = None, json: Json = False) -> None:
    """Rebuild the index from the ledger alone.

    Example: REGISTRY_DATABASE_URL=postgresql+psycopg://db/registry registry reindex
    """
    from registry.cli.output import console, print_json
    from registry.store.reindex import reindex as rebuild

    report = rebuild(find(home))
    if json:
        print_json(report)
        return
    console.print(f"indexed {report.indexed} records", highlight=False)
    for rid, why in report.skipped.items():
        console.print(f"skipped {short_id(rid)}: {why}", highlight=False)
