"""The `registry` command: a thin typer layer over the library.

One module per command group (`registry/cli/<group>.py`), each with a `register(app)`
that adds its commands; `COMMANDS` names, for each command, the module that registers
it, in the order `registry --help` lists them. A new group is a module and its lines
here (tests/test_cli.py checks that the two agree). A command's module is imported only
when it runs (registry.cli.app.LazyGroup), and it imports typer and the shared options
only: the library is imported inside each command, so `registry list` loads only what
it uses (tests/test_startup.py).
"""

from __future__ import annotations

from registry.cli.app import LazyGroup, app, interrupted, output_closed

COMMANDS: dict[str, str] = {
    "recipe": "recipe", "inspect": "inspect", "kv": "inspect", "run": "run",
    "init": "home", "reindex": "home", "keys": "keys", "verify": "verify",
    "list": "records", "show": "records", "seal": "seal", "import": "seal",
    "remote": "team", "push": "team", "pull": "team", "review": "review",
    "teacher": "contracts", "check": "contracts", "resolve": "resolve", "diff": "diff",
    "reproduce": "reproduce", "ab": "ab", "claim": "claim", "queue": "queue",
    "worker": "worker", "report": "report", "compare": "compare", "bench-import": "bench",
    "promote": "promote", "publish": "publish", "credit": "credit",
}
"""command name -> the registry.cli module whose `register(app)` adds it."""
LazyGroup.modules = COMMANDS


def main() -> None:
    """Run the command line (registry/__main__.py installs the Ctrl-C handler first)."""
    import sys

    try:
        try:
            app()
        finally:  # the last of the output, while a closed pipe can still be told apart
            sys.stdout.flush()
    except BrokenPipeError:
        output_closed()
    except KeyboardInterrupt:  # one that escaped the command (typer's own parsing)
        interrupted()
        sys.stderr.write("interrupted\n")
        sys.exit(130)


__all__ = ["COMMANDS", "app", "main"]
