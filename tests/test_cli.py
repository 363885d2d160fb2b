"""The command line itself: version, help with examples, fast start without torch."""

from __future__ import annotations

import subprocess
import sys

import typer

from registry import __version__
from registry.cli import app


def test_version(cli) -> None:
    r = cli("--version")
    assert r.exit_code == 0 and __version__ in r.stdout


def _commands(group, prefix: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


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
