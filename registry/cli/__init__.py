"""The `registry` command: a thin typer layer over the library.

One module per command group (`registry.cli.<group>`), each with a `register(app)` that
adds its commands; `GROUPS` lists them in the order `registry --help` shows them. A
module imports typer and the shared options only: the library is imported inside each
command, so a command loads only what it uses (tests/test_startup.py).
"""

from __future__ import annotations

from importlib import import_module

from registry.cli.app import app

GROUPS = ("recipe", "inspect", "run", "home", "keys", "verify", "records", "seal", "team",
          "review", "contracts", "resolve", "diff", "reproduce", "ab", "claim", "queue",
          "worker", "report", "compare", "bench")
"""The command groups: each is `registry/cli/<group>.py` with a `register(app)`."""


def _register() -> None:
    for group in GROUPS:
        import_module(f"registry.cli.{group}").register(app)


_register()


def main() -> None:
    app()


__all__ = ["GROUPS", "app", "main"]
