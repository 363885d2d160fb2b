"""The options every command group shares, defined once: `--home`, `--json`, and the
home they name.

A command declares `home: HomeOpt = None, json: Json = False`; docs/cli.md documents
them once for every command (tests/test_docs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from registry.store.home import Home

HomeOpt = Annotated[Path | None, typer.Option(
    "--home", show_default=False,
    help="Registry home (default: $REGISTRY_HOME, else the nearest .registry/ above here).")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def find(home: Path | None) -> Home:
    """The home `--home` names, else `$REGISTRY_HOME`, else the nearest `.registry/`."""
    from registry.store.home import find_home

    return find_home(home)
