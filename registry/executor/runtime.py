"""A container runtime's calls on one container, named by its id (or its exact name),
never by a pattern: whether it exists or runs, whose it is (its `registry.owner`
label), and its stop under the host's policy.

A stop is `<runtime> kill --signal SIGTERM REF` and the grace, then `<runtime> kill
--signal SIGKILL REF` only where the policy allows SIGKILL (a step of its own: a hard
kill is a fault under the lab's rules), else a container that outlives the grace is
left running and reported; then `<runtime> rm REF` of a stopped container (`--rm`
usually did it). Every
call is bounded in time; each step is returned as a line for the run's record.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable

CALL_TIMEOUT_S = 30.0
OWNER_LABEL = "registry.owner"
RUN_LABEL = "registry.run"
SESSION_LABEL = "registry.session"
SESSION_ENV = "REGISTRY_CONTAINER_SESSION"


def _call(runtime: str, args: list[str], timeout: float = CALL_TIMEOUT_S) -> tuple[int, str]:
    """The runtime's exit status and its output (stdout, else stderr), or -1 and why."""
    found = shutil.which(runtime)
    if found is None:
        return -1, f"{runtime} not found"
    try:
        done = subprocess.run([found, *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return -1, f"{runtime} {args[0]}: no answer in {timeout:g} s"
    return done.returncode, (done.stdout.strip() or done.stderr.strip())[:300]


def exists(runtime: str, ref: str) -> bool:
    code, _ = _call(runtime, ["container", "inspect", "--format", "{{.Id}}", ref])
    return code == 0


def running(runtime: str, ref: str) -> bool:
    code, out = _call(runtime, ["container", "inspect", "--format", "{{.State.Running}}", ref])
    return code == 0 and out == "true"


def label(runtime: str, ref: str, key: str) -> str | None:
    code, out = _call(runtime, ["container", "inspect", "--format",
                                f'{{{{index .Config.Labels "{key}"}}}}', ref])
    return out if code == 0 and out and out != "<no value>" else None


def labelled(runtime: str, key: str, value: str | None = None) -> list[str]:
    """Ids of the containers (running or not) whose label `key` is exactly `value` (None:
    that have the label at all)."""
    wanted = key if value is None else f"{key}={value}"
    code, out = _call(runtime, ["ps", "-a", "--no-trunc", "-q", "--filter", f"label={wanted}"])
    return out.split() if code == 0 else []


def stop(runtime: str, ref: str, grace_s: float, kill: bool) -> tuple[list[str], bool]:
    """Stop and remove one container under the policy: (the steps, whether it is gone).
    SIGTERM, the grace; SIGKILL only where `kill` allows it (its own step, so that a
    hard kill can be told); then `rm` of a stopped container that `--rm` left."""
    steps = []
    for sig, allowed, wait in (("SIGTERM", True, grace_s), ("SIGKILL", kill, 10.0)):
        if not allowed or not running(runtime, ref):
            break
        code, out = _call(runtime, ["kill", "--signal", sig, ref])
        steps.append(f"{runtime} kill --signal {sig} {ref}: exit {code}"
                     + (f" ({out})" if code else ""))
        _wait(lambda: not running(runtime, ref), wait)
    if not running(runtime, ref):
        _wait(lambda: not exists(runtime, ref), 5.0)  # `--rm` removes it meanwhile
    if exists(runtime, ref) and not running(runtime, ref):
        code, out = _call(runtime, ["rm", ref])
        steps.append(f"{runtime} rm {ref}: exit {code}" + (f" ({out})" if code else ""))
    return steps, not exists(runtime, ref)


def _wait(done: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.2)
