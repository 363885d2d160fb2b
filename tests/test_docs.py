"""Docs that cannot drift: every command, option and exit code is in docs/cli.md, the
module map of docs/architecture.md matches the tree, and the tutorial's commands run."""

from __future__ import annotations

import os
import re
import subprocess
import sys

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


def tutorial_commands() -> str:
    text = (ROOT / "docs" / "tutorial.md").read_text()
    return "\n".join(re.findall(r"^```bash\n(.*?)^```", text, flags=re.M | re.S))


def test_the_tutorial_runs(tmp_path) -> None:
    script = tutorial_commands()
    assert "registry report" in script and "registry diff" in script
    variables = {**os.environ, "HOME": str(tmp_path), "REPO": str(ROOT),
                 "REGISTRY_KEYS_DIR": str(tmp_path / "keys"),
                 "REGISTRY_HASH_CACHE": str(tmp_path / "hashes.sqlite"),
                 "PYTHONPATH": str(ROOT)}
    for name in ("REGISTRY_HOME", "REGISTRY_DATABASE_URL"):
        variables.pop(name, None)
    prelude = f'set -euo pipefail\nregistry() {{ "{sys.executable}" -m registry "$@"; }}\n'
    done = subprocess.run(["bash", "-c", prelude + script], cwd=tmp_path, env=variables,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "report" / "index.html").is_file()
    assert "REFUSED" in done.stdout  # the diff across KV precisions, as the text says
