"""The wheel people install: built from this tree, installed with pip into a fresh venv
(its dependencies from PyPI), it brings no torch and no vLLM, and the read commands and
`report` work there on a home of real records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import sealed_home
from tests.conftest import ROOT

env = sealed_home.env  # the module fixture: a home of real sealed records

pytestmark = pytest.mark.package


@pytest.fixture(scope="module")
def fresh() -> Iterator[Path]:
    # a private folder: pytest's numbered temp folders are pruned by other pytest runs
    # on a shared machine, and a venv that loses its pyvenv.cfg runs as the base Python
    with tempfile.TemporaryDirectory(prefix="registry-package-") as tmp:
        yield from _fresh(Path(tmp))


def _fresh(base: Path) -> Iterator[Path]:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", base / "dist", ROOT], check=True, capture_output=True)
    [wheel] = (base / "dist").glob("serving_registry-*.whl")
    subprocess.run([sys.executable, "-m", "venv", base / "venv"], check=True)
    variables = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as a user's shell
    pip = subprocess.run([base / "venv/bin/python", "-m", "pip", "install", "-q", wheel],
                         capture_output=True, text=True, env=variables, cwd=base)
    if pip.returncode != 0:
        pytest.fail(f"pip install of the wheel failed: {pip.stderr[-2000:]}")
    yield base / "venv"


def clean(venv: Path, env_: dict) -> dict[str, str]:
    """Only what a user's shell would hold: no PYTHONPATH pointing at this tree."""
    return {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(env_["base"]),
            "REGISTRY_HOME": str(env_["home"].root),
            "REGISTRY_KEYS_DIR": str(env_["base"] / "keys"), "LANG": "C.UTF-8"}


def run(venv: Path, env_: dict, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([venv / "bin" / "registry", *args], capture_output=True, text=True,
                          env=clean(venv, env_), cwd=env_["base"], timeout=300)


def test_wheel_installs_without_an_engine(fresh, env) -> None:
    probe = subprocess.run([fresh / "bin/python", "-c",
                            "import importlib.util as u, json; print(json.dumps("
                            "[u.find_spec(m) is None for m in ('torch', 'vllm')]))"],
                           capture_output=True, text=True, check=True, env=clean(fresh, env))
    assert json.loads(probe.stdout) == [True, True]
    located = subprocess.run([fresh / "bin/python", "-c",
                              "import registry; print(registry.__file__)"],
                             capture_output=True, text=True, check=True, cwd="/",
                             env=clean(fresh, env))
    assert str(fresh) in located.stdout  # the installed copy, not this tree
    from registry import __version__

    assert run(fresh, env, "--version").stdout.strip() == f"registry {__version__}"


def test_read_commands_and_report_in_the_fresh_venv(fresh, env) -> None:
    listed = run(fresh, env, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [r["id"] for r in json.loads(listed.stdout)]
    assert len(ids) == 6
    a, b = env["bf16"][:2]
    for args in (("show", a[:12]), ("diff", a[:12], b[:12]), ("verify", "--all"),
                 ("compare", "--format", "csv")):
        done = run(fresh, env, *args)
        assert done.returncode == 0, (args, done.stderr)
    out = env["base"] / "fresh-report"
    done = run(fresh, env, "report", "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 6
    assert (out / "assets" / "vega.js").stat().st_size > 100_000
    assert (out / "assets" / "report.js").read_text() == (
        ROOT / "registry/report/assets/report.js").read_text()
    assert os.path.isfile(out / "records" / f"{a}.html")
