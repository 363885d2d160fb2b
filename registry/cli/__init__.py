"""The `registry` command: a thin typer layer over the library.

Every command parses its arguments, calls one library function and prints the
typed result (rich for people, `--json` for scripts). User errors are caught once,
here, and printed as one message with their documented exit code. Anything else is
a bug: it too is one message (exit 70, never a traceback) unless `REGISTRY_DEBUG=1`.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from registry import __version__
from registry.errors import ExitCode, RegistryError


class RegistryGroup(TyperGroup):
    """Turns a `RegistryError` into one message on stderr and its exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except RegistryError as e:
            from registry.cli.output import print_error

            print_error(e)
            raise typer.Exit(int(e.exit_code)) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except Exception as e:
            # typer's (and click's) own exits and usage errors are theirs to report
            if os.environ.get("REGISTRY_DEBUG") or type(e).__module__.split(".")[0] in (
                    "typer", "click"):
                raise
            from registry.cli.output import print_internal

            print_internal(e)
            raise typer.Exit(int(ExitCode.INTERNAL)) from None


def new_app(help: str) -> typer.Typer:
    return typer.Typer(cls=RegistryGroup, help=help, no_args_is_help=True,
                       pretty_exceptions_enable=False, rich_markup_mode=None)


app = new_app("Recipes and signed provenance records for LLM serving runs.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"registry {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Recipes and signed provenance records for LLM serving runs."""


def _register() -> None:
    from registry.cli import inspect, recipe

    app.add_typer(recipe.app, name="recipe")
    app.command("inspect")(inspect.inspect)
    app.command("kv")(inspect.kv)
    from registry.cli import run

    app.command("run")(run.command)
    from registry.cli import seal, store

    store.register(app)
    seal.register(app)
    from registry.cli import team

    team.register(app)
    from registry.cli import contracts

    contracts.register(app)
    from registry.cli import resolve

    app.command("resolve")(resolve.resolve)
    from registry.cli import diff

    app.command("diff")(diff.diff)
    from registry.cli import reproduce

    app.command("reproduce")(reproduce.reproduce)
    from registry.cli import ab

    app.command("ab")(ab.ab)
    from registry.cli import report

    app.command("report")(report.report)
    from registry.cli import compare

    app.command("compare")(compare.compare)
    from registry.cli import bench

    app.command("bench-import")(bench.bench_import)


_register()


def main() -> None:
    app()
