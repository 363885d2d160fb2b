"""Ctrl-C during `registry verify --all`, at any moment (while the command line loads,
mid-verification, while it reports): one line, `interrupted`, and exit 130; never a
traceback (it was one in 4 of 6 tries). Not covered: a Ctrl-C while the interpreter itself
starts, before any of the registry's code runs. On a busy host that can take longer than
the shortest delay, so the child runs with `-X importtime`: its stderr then says whether
the `registry` package had loaded when the signal came, instead of a guess from a clock."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from tests.conftest import ROOT

RUNS = ROOT / "tests" / "data" / "cpu-runs"


def test_ctrl_c_is_one_line_and_exit_130(cli, store_home, tmp_path) -> None:
    for lane in ("tiny-bf16-kv", "tiny-fp8-kv"):
        run = shutil.copytree(RUNS / lane, tmp_path / lane)
        assert cli("seal", run, "--recipe", ROOT / "recipes" / f"{lane}.toml").exit_code == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    seen = []
    for delay in (0.25, 0.4, 0.7, 1.0, 1.5, 2.0):
        p = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "registry", "verify",
                              "--all"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        time.sleep(delay)
        os.killpg(p.pid, signal.SIGINT)  # as a terminal sends it: the whole process group
        out, timed = p.communicate(timeout=120)
        err, started = _without_import_times(timed)
        if not started:
            continue  # the interpreter was still starting: what follows is Python's
        assert b"Traceback" not in out + err, err.decode()
        if p.returncode != 0:  # 0: it had finished before the signal came
            assert (p.returncode, err) == (130, b"interrupted\n"), (delay, err.decode())
        seen.append(p.returncode)
    assert 130 in seen


PROBE = """
import os
import signal
import sys
import time
import typer
import registry.__main__
from registry.cli.app import new_app

app = new_app("probe")

@app.command()
def build() -> None:
    exec("raise KeyboardInterrupt")  # as a Ctrl-C landing while a dataclass is built

class Finalized:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):  # the handler runs here, inside the finalizer
            pass


@app.command()
def finalizer() -> None:
    Finalized()  # dropped at once: its __del__ runs
    time.sleep(5)
    print("finished")

signal.signal(signal.SIGINT, registry.__main__._interrupt)
sys.unraisablehook = registry.__main__._swallowed
app()
"""


def run_probe(tmp_path, command: str) -> subprocess.CompletedProcess[bytes]:
    """`python -m probe COMMAND`: PROBE as a package's __main__, as `python -m registry`."""
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "__init__.py").write_text("")
    (tmp_path / "probe" / "__main__.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    return subprocess.run([sys.executable, "-m", "probe", command], env=env,
                          capture_output=True, timeout=120)


def test_an_interrupt_inside_exec_still_exits_130(tmp_path) -> None:
    """CPython turns the exit of `python -m` into a SIGINT death (-2) after a
    KeyboardInterrupt escaped an exec() of source text, even one that was handled:
    the failure CI saw once at 0.25 s."""
    p = run_probe(tmp_path, "build")
    assert (p.returncode, p.stderr) == (130, b"interrupted\n")


def test_an_interrupt_inside_a_finalizer_is_not_lost(tmp_path) -> None:
    """A Ctrl-C whose handler runs inside a `__del__` would be printed as "Exception
    ignored" and lost (the command went on to the end); it is raised again outside."""
    p = run_probe(tmp_path, "finalizer")
    assert (p.returncode, p.stdout, p.stderr) == (130, b"", b"interrupted\n")


def _without_import_times(stderr: bytes) -> tuple[bytes, bool]:
    """The child's stderr without `-X importtime` lines, and whether the `registry`
    package had finished loading (its own line is there)."""
    lines = stderr.splitlines(keepends=True)
    timings = [line for line in lines if line.startswith(b"import time:")]
    started = any(line.rstrip().endswith(b"| registry") for line in timings)
    return b"".join(line for line in lines if line not in timings), started
