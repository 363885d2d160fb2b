"""A reader that closes the output early (`registry list | head`) ends the command
quietly: exit 141 (128 + SIGPIPE, as git ends under `| head`), nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from registry.errors import ExitCode


def closed_early(*args: str) -> tuple[int, str]:
    """Run `registry ARGS` with its stdout a pipe that is closed before it writes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "registry", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_list_and_show_into_a_closed_pipe_end_quietly(store_home, make_run, seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    for args in (("list",), ("list", "--json"), ("show", sealed.id[:12]),
                 ("show", sealed.id[:12], "--json")):
        code, err = closed_early(*args)
        assert (code, err) == (ExitCode.CLOSED_OUTPUT, ""), args

