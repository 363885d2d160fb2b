"""Docs that cannot drift: every command, option and exit code is in docs/cli.md, and
every command block of docs/cli.md, team.md, claims.md and fleet.md runs as printed, in
order, in one shell, in a copy of a checkout's recipes, identities, tools and test data
(a block marked `# not run: WHY` is counted and printed, one marked `# exits N: WHY` must
end in that refusal). The tutorial runs in tests/test_tutorial.py, from the built wheel."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
import typer

from registry.cli import app
from registry.errors import ExitCode
from tests.conftest import ROOT, fresh_database
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


# ---- every command block of the reference docs runs as printed ----

DOCS = ("cli", "team", "claims", "fleet")
NOT_RUN = re.compile(r"^# not run: (\S.*)$", re.M)  # a block that needs what CI lacks, and why
EXITS = re.compile(r"^# exits (\d+): (\S.*)$", re.M)  # a block whose last command refuses
BLOCK_MARK = "@@ docs block {} done @@"
CHECKOUT = ("recipes", "identities", "tools", "tests/data")  # what the examples name


def command_blocks(doc: str) -> list[str]:
    """Every `bash` and `sh` block of docs/DOC.md, in order."""
    text = (ROOT / "docs" / f"{doc}.md").read_text()
    return re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, flags=re.M | re.S)


def blocks_script(blocks: list[str]) -> tuple[str, int, list[str]]:
    """The blocks as one shell session (variables carry over), a mark after each; a block
    marked `# not run: WHY` is left out and its reason kept; one marked `# exits N: WHY`
    must end with that exit status, and no command in it may fail otherwise."""
    parts, ran, skipped = ["set -euo pipefail"], 0, []
    for i, block in enumerate(blocks):
        if why := NOT_RUN.search(block):
            skipped.append(why[1])
            continue
        ran += 1
        if code := EXITS.search(block):  # any other failure in it still stops the run
            wrong = f"{{ echo \"docs block {i}: exit $rc, not {code[1]}\" >&2; exit 1; }}"
            parts += ["set +e", f"trap 'rc=$?; test \"$rc\" = {code[1]} || {wrong}' ERR",
                      block, f"rc=$?; trap - ERR; set -e; test \"$rc\" = {code[1]} || {wrong}"]
        else:
            parts.append(block)
        parts.append(f"echo \"{BLOCK_MARK.format(i)} $(date +%s.%N)\"")
    return "\n".join(parts) + "\n", ran, skipped


def slowest(out: str, n: int = 3) -> str:
    """The n blocks that took longest, from the marks' clocks."""
    marks = [(int(m[1]), float(m[2])) for m in
             re.finditer(r"^@@ docs block (\d+) done @@ ([\d.]+)$", out, flags=re.M)]
    spans = sorted(((b - a, i) for (_, a), (i, b) in pairwise(marks)), reverse=True)
    return ", ".join(f"block {i} {s:.1f} s" for s, i in spans[:n]) or "-"


def checkout(where: Path) -> None:
    """The parts of a checkout the examples name, copied (some write beside them)."""
    import shutil

    for part in CHECKOUT:
        shutil.copytree(ROOT / part, where / part, symlinks=True)


def queue_database(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh PostgreSQL database for the blocks that queue work (cli, fleet)."""
    with fresh_database(request.getfixturevalue("postgres_server"), "docs") as url:
        yield url.replace("+psycopg", "")


QUEUED = ("cli", "fleet")  # the docs whose blocks use the bench queue


@pytest.mark.parametrize("doc", [pytest.param(d, marks=pytest.mark.postgres) if d in QUEUED
                                 else d for d in DOCS])
def test_command_blocks_run_as_printed(doc: str, request: pytest.FixtureRequest,
                                       tmp_path: Path) -> None:
    import contextlib
    import os
    import subprocess
    import sys
    import time

    blocks = command_blocks(doc)
    script, ran, skipped = blocks_script(blocks)
    work, home = tmp_path / "checkout", tmp_path / "home"
    home.mkdir()
    checkout(work)
    venv = Path(sys.executable).parent
    env = {"PATH": f"{venv}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
           "LANG": "C.UTF-8", "TMPDIR": str(tmp_path), "COLUMNS": "100",
           "PYTHONPATH": str(ROOT),
           "REGISTRY_ENGINE_PYTHON": str(venv / "python")}
    if "REGISTRY_HASH_CACHE" in os.environ:
        env["REGISTRY_HASH_CACHE"] = os.environ["REGISTRY_HASH_CACHE"]
    with contextlib.ExitStack() as stack:
        if doc in QUEUED:
            env["REGISTRY_QUEUE_URL"] = stack.enter_context(
                contextlib.contextmanager(queue_database)(request))
        started = time.monotonic()
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)
        seconds = time.monotonic() - started
    marks = [i for i in range(len(blocks)) if BLOCK_MARK.format(i) in done.stdout]
    print(f"docs/{doc}.md: {ran} blocks ran, {len(skipped)} not run "
          f"({'; '.join(skipped) or 'none'}), {seconds:.1f} s; slowest: {slowest(done.stdout)}")
    failed = next((i for i in range(len(blocks)) if i not in marks
                   and not NOT_RUN.search(blocks[i])), None)
    assert done.returncode == 0, (
        f"docs/{doc}.md block {failed} failed (exit {done.returncode}):\n"
        f"{blocks[failed] if failed is not None else ''}\n{done.stderr[-3000:]}\n"
        f"stdout:\n{done.stdout[-3000:]}")
    (tmp_path / "blocks.out").write_text(done.stdout + done.stderr)  # to read after a run
    assert "Traceback" not in done.stdout + done.stderr, f"docs/{doc}.md: a traceback"
    assert ran, f"docs/{doc}.md: no command block ran: nothing was checked"
    assert len(skipped) <= 2, f"docs/{doc}.md: {len(skipped)} blocks not run: {skipped}"
