"""Docs that cannot drift: every command, option and exit code is in docs/cli.md, the
module map of docs/architecture.md matches the tree (the tutorial runs in
tests/test_tutorial.py, from the built wheel)."""

from __future__ import annotations

import re

import typer

from registry.cli import app
from registry.errors import ExitCode
from tests.conftest import ROOT
from tests.test_cli import _commands

CLI_MD = (ROOT / "docs" / "cli.md").read_text()
SHARED_OPTIONS = {"--home", "--json"}  # documented once for every command that has them


def sections() -> dict[str, str]:
    """Heading command (`registry keys init|list` expanded) -> its section's text."""
    out: dict[str, str] = {}
    for part in re.split(r"^### ", CLI_MD, flags=re.M)[1:]:
        heading = part.splitlines()[0]
        m = re.match(r"`registry ((?:[a-z-]+ )*)([a-z|-]+)", heading)
        if not m:
            continue
        for name in m[2].split("|"):
            out[f"{m[1]}{name}".strip()] = part
    return out


def test_every_command_and_option_is_in_cli_md() -> None:
    documented = sections()
    group = typer.main.get_command(app)
    missing = []
    for path, command in _commands(group):
        name = " ".join(path)
        if name not in documented:
            missing.append(f"command `registry {name}`")
            continue
        for param in command.params:
            for opt in param.opts:
                if (opt.startswith("--") and opt != "--help" and opt not in SHARED_OPTIONS
                        and not re.search(re.escape(opt) + r"(?![\w-])", documented[name])):
                    missing.append(f"`registry {name} {opt}`")
    assert not missing, "missing from docs/cli.md: " + ", ".join(missing)


def test_every_exit_code_is_in_the_table() -> None:
    table = CLI_MD.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert {int(code) for code in ExitCode} <= rows, sorted(
        {int(c) for c in ExitCode} - rows)
