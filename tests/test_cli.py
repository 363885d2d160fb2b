"""The command line itself: version, help with examples, fast start without torch."""

from __future__ import annotations

import subprocess
import sys

import typer

from registry import __version__
from registry.cli import app
from tests.conftest import ROOT


def test_version(cli) -> None:
    r = cli("--version")
    assert r.exit_code == 0 and __version__ in r.stdout


def _commands(group, prefix: tuple[str, ...] = ()):
    """Every command, through click's own API (the root loads its commands lazily)."""
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if hasattr(command, "list_commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def test_each_command_comes_from_the_module_commands_names() -> None:
    """registry.cli.COMMANDS is the map the lazy root loads from: each module registers
    exactly the commands it is named for, and every module of a group is named."""
    from registry.cli import COMMANDS
    from registry.cli.app import built

    modules = set(COMMANDS.values())
    for module in modules:
        assert set(built(module)) == {n for n, m in COMMANDS.items() if m == module}, module
    helpers = {"__init__", "app", "options", "output", "exits", "importing"}
    groups = {p.stem for p in (ROOT / "registry" / "cli").glob("*.py")} - helpers
    assert groups == modules, "a registry/cli module with commands is missing from COMMANDS"


def test_every_command_has_help_with_an_example(cli) -> None:
    group = typer.main.get_command(app)
    commands = list(_commands(group))
    assert commands
    for path, command in commands:
        r = cli(*path, "--help")
        assert r.exit_code == 0, path
        assert "Example:" in (command.help or ""), f"{' '.join(path)} has no example in its help"


def test_help_does_not_import_torch_or_vllm() -> None:
    code = (
        "import sys\n"
        "from registry.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm'))\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout
