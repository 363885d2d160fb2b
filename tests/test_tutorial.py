"""The tutorial (docs/tutorial.md, where the README sends newcomers) run literally: its
`bash` blocks, in order, in an empty folder with an empty `$HOME`, as a user's shell
would run them. Its first block builds the wheel from this tree and installs it into a
fresh venv with pip (the dependencies come from the package index: about 30 s, no
torch and no vLLM), so every later `registry` is the installed command."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.package

TUTORIAL = ROOT / "docs" / "tutorial.md"
MARK = "@@ block {} done @@"


def blocks() -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", TUTORIAL.read_text(), flags=re.M | re.S)


def script(found: list[str]) -> str:
    """The blocks as one shell script (variables carry over, as in one terminal), each
    followed by a mark: under `set -e` the last mark printed names the block that failed."""
    parts = ["set -euo pipefail"]
    for i, block in enumerate(found):
        parts += [block, f"echo '{MARK.format(i)}'"]
    return "\n".join(parts) + "\n"


def shell_env(home: Path) -> dict[str, str]:
    """A user's shell: a Python 3 on PATH (the one that runs these tests, outside any
    venv), an empty home, none of this tree's or the test run's variables."""
    base = Path(sys._base_executable).parent
    return {"PATH": f"{base}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
            "LANG": "C.UTF-8", "REPO": str(ROOT), "TMPDIR": str(home),
            # the engine's own environment (the vLLM CPU build), as the tutorial says
            "REGISTRY_ENGINE_PYTHON": str(ROOT / ".venv" / "bin" / "python")}


def test_the_tutorial_runs_from_the_built_wheel() -> None:
    found = blocks()
    assert "pip install" in found[0] and "registry report" in found[-1]
    with tempfile.TemporaryDirectory(prefix="registry-tutorial-") as tmp:
        home = Path(tmp)
        done = subprocess.run(["bash", "-c", script(found)], cwd=home, env=shell_env(home),
                              capture_output=True, text=True, timeout=900)
        marks = [i for i in range(len(found)) if MARK.format(i) in done.stdout]
        failed = len(marks)
        assert done.returncode == 0, (
            f"block {failed} failed (exit {done.returncode}):\n{found[min(failed, len(found) - 1)]}"
            f"\n{done.stderr[-3000:]}\nstdout:\n{done.stdout[-4000:]}")
        assert marks == list(range(len(found)))
        out = done.stdout
        from registry import __version__

        assert f"registry {__version__}" in out
        registry = home / ".venvs" / "registry"
        assert "tiny-bf16-exact" in out and "tiny-fp8-kv" in out  # list names both lanes
        assert "REFUSED" in out  # the diff across KV precisions, as the text says
        assert "degraded: the decode figures stand on fewer" in out  # said at the seal
        last = out.rsplit(MARK.format(len(found) - 2), 1)[0].splitlines()
        verdict = [line for line in last if "REPRODUCED" in line]
        assert verdict and verdict[-1].startswith("REPRODUCED"), out[-4000:]
        assert "None" not in "\n".join(last[-40:])  # a missing fact is words
        assert (home / "report" / "index.html").is_file()
        # the installed copy ran, not this tree
        located = subprocess.run([registry / "bin/python", "-c",
                                  "import registry; print(registry.__file__)"],
                                 capture_output=True, text=True, env=shell_env(home), cwd="/")
        assert located.stdout.startswith(str(registry))
