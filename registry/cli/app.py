"""The `registry` application: the root command, and the one place a user error becomes
a message and an exit code.

Every command parses its arguments, calls one library function and prints the
typed result (rich for people, `--json` for scripts). User errors are caught once,
here, and printed as one message with their documented exit code. Anything else is
a bug: it too is one message (exit 70, never a traceback) unless `REGISTRY_DEBUG=1`.
"""

from __future__ import annotations

import os
import warnings
from typing import Annotated, Any, ClassVar, NoReturn

import typer
from typer.core import TyperGroup

from registry import __version__
from registry.errors import ExitCode, RegistryError, RegistryWarning


def _shown(caught: list[warnings.WarningMessage]) -> None:
    """A RegistryWarning is one `warning:` line on stderr; any other, Python's way."""
    for w in caught:
        if issubclass(w.category, RegistryWarning):
            typer.echo(f"warning: {w.message}", err=True)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)

INVOKING = False  # a command is running: Ctrl-C unwinds it (registry/__main__.py)


class RegistryGroup(TyperGroup):
    """Turns a `RegistryError` into one message on stderr and its exit code."""

    def invoke(self, ctx: Any) -> Any:
        global INVOKING
        INVOKING = True
        with warnings.catch_warnings(record=True) as caught:
            try:
                return self._invoke(ctx)
            finally:  # the command is over: a late Ctrl-C changes nothing it did or said
                import signal

                if _ours():
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                INVOKING = False
                _shown(caught)

    def _invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except RegistryError as e:
            from registry.cli.output import print_error

            print_error(e)
            raise typer.Exit(int(e.exit_code)) from None
        except BrokenPipeError:  # the reader closed stdout (`| head`): nothing to report
            output_closed()
        except KeyboardInterrupt:
            interrupted()
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


def interrupted() -> None:
    """A Ctrl-C has been caught: the message and exit go on uninterrupted, with exit 130.

    CPython remembers a KeyboardInterrupt that escaped an `exec()` of source text
    (dataclasses and namedtuples build their methods that way, so an import hit by the
    signal does it) and, under `python -m`, ends the process with SIGINT (-2) however the
    exception was handled; evaluating source text once more clears that memory."""
    import signal

    if _ours():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    exec("None")


def output_closed() -> NoReturn:
    """End quietly, exit 141 (128 + SIGPIPE, as git ends), when whoever reads stdout has
    closed it: what is still buffered goes nowhere, so Python's own flush at exit has
    nothing to complain about."""
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise SystemExit(int(ExitCode.CLOSED_OUTPUT))


def _ours() -> bool:
    """Is SIGINT handled by the `registry` command's handler (registry/__main__.py)? Never
    touched otherwise: a program or test that runs the app in-process keeps its own."""
    import signal
    import threading

    handler = signal.getsignal(signal.SIGINT)
    return threading.current_thread() is threading.main_thread() and getattr(
        handler, "__module__", None) in ("__main__", "registry.__main__") and getattr(
        handler, "__name__", "") == "_interrupt"


class LazyGroup(RegistryGroup):
    """The root command: a command's module is imported, and its click command built,
    only when that command runs or help lists it (`registry list` loads one module of
    the CLI, not all of them). `modules` maps each command's name to its module, in the
    order help lists them."""

    modules: ClassVar[dict[str, str]] = {}  # command name -> registry.cli module (registry.cli)

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.modules, *(n for n in super().list_commands(ctx) if n not in self.modules)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.modules:
            self.commands.update(built(self.modules[cmd_name]))
        return super().get_command(ctx, cmd_name)


def built(module: str) -> dict[str, Any]:
    """name -> click command of every command the module registers."""
    from importlib import import_module

    group = new_app("")
    import_module(f"registry.cli.{module}").register(group)
    return dict(typer.main.get_group(group).commands)


def new_app(help: str, cls: type[TyperGroup] = RegistryGroup) -> typer.Typer:
    return typer.Typer(cls=cls, help=help, no_args_is_help=True,
                       pretty_exceptions_enable=False, rich_markup_mode=None)


app = new_app("Recipes and signed provenance records for LLM serving runs.", LazyGroup)


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
