"""The engine process: start in its own session, wait until it serves, tear it down.

Teardown is the same on every exit path: TERM the server (it stops its workers
cleanly), then TERM the whole process group, then, only where the host's stop policy
allows it, KILL it; each step is recorded with its time; then check that the port is
closed and no process of the session is left, and report that as `Cleanup`.

An engine never outlives what started it: the child asks the kernel for SIGTERM when
its parent dies (prctl PR_SET_PDEATHSIG), and a pid file names it until it is torn
down, so that the next worker on the host reaps what a killed one left
(registry/executor/orphans.py).
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol

import httpx
from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.engines.plugin import engine_for
from registry.errors import EngineFailed
from registry.executor import orphans
from registry.executor.logtail import error_line
from registry.executor.placement import Placement, colocate_engine_core
from registry.executor.profiles import profile_for
from registry.formats.rundir import LaunchPlan
from registry.recipe.schema import Platform

# Session ids of every engine this process started, and those not yet torn down: a
# last-resort KILL at interpreter exit covers a crash inside the registry itself.
STARTED: list[int] = []
_LIVE: set[int] = set()

GRACE_S = 30.0  # the server's own shutdown (it force-kills its workers after a few s)
GROUP_GRACE_S = 5.0
POLL_S = 0.5


class StopPolicy(Frozen):
    """How this host stops an engine (the worker's host policy sets it: docs/fleet.md)."""

    grace_s: float = Field(GRACE_S, description="after SIGTERM to the server")
    group_grace_s: float = Field(GROUP_GRACE_S, description="after SIGTERM to its group")
    kill: bool = Field(True, description="SIGKILL the group when the grace ran out; "
                                         "false leaves it running, reported")
    pid_dir: Path = Field(default_factory=orphans.default_dir,
                          description="where each live engine's pid file is kept")


HOST = StopPolicy()
"""This process's stop policy; `set_stop_policy` replaces it (a worker, from its host
policy)."""


def set_stop_policy(policy: StopPolicy) -> None:
    global HOST
    HOST = policy


class StopStep(Frozen):
    """One step of a teardown: the signal sent (or the stop command run), to whom, when
    (s after the stop began)."""

    step: str
    at_s: float
    gone: bool = Field(description="whether the engine was gone when its grace ended")
    detail: str | None = Field(None, description="the stop command's exit and last line")


class Cleanup(Frozen):
    """How the engine went away: recorded in status.json."""
    pid: int | None = None  # the server's pid, also its session and process group id
    exit_code: int | None
    # "exited" | "TERM server" | "stop command" | "<SIGNAL> launcher" | "TERM group" |
    # "KILL group" | "<runtime> stop" | "KILL container" | "left running"
    stopped_by: str
    seconds: float
    port_closed: bool
    leftover_pids: list[int]
    steps: list[StopStep] = Field(default_factory=empty_list)

    @property
    def clean(self) -> bool:
        return self.port_closed and not self.leftover_pids


def port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def base_env(platform: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's variables the profile lets through (a plan's env goes on top)."""
    environ = os.environ if environ is None else environ
    patterns = profile_for(Platform(platform)).inherit
    return {k: v for k, v in environ.items() if any(fnmatch.fnmatchcase(k, p) for p in patterns)}


def engine_env(launch: LaunchPlan) -> dict[str, str]:
    """The engine's whole environment: the caller's variables the profile lets through,
    the plan's on top."""
    return {**base_env(launch.platform), **launch.env}


def resolve_command(argv: list[str], python: str | None = None) -> list[str]:
    """`python` is the engine's interpreter (the plan's `python`, else the registry's);
    anything else must be on PATH."""
    if argv[0] == "python":
        return [python or sys.executable, *argv[1:]]
    found = shutil.which(argv[0])
    if found is None:
        raise EngineFailed(f"engine binary {argv[0]!r} not found on PATH",
                           hint="install the engine, or activate its environment")
    return [found, *argv[1:]]


def session_pids(sid: int) -> list[int]:
    """Live (non-zombie) processes of a session, from /proc."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            pids.append(int(entry.name))
    return sorted(pids)


class EngineProcess(Protocol):
    """What the executor needs of an engine: the real vLLM process (`Engine`), or a
    scripted stand-in in tests that serves the same HTTP API."""

    log_path: Path
    placement: Placement | None

    @property
    def base_url(self) -> str: ...
    def start(self) -> None: ...
    def wait_ready(self, timeout: float, tick: Callable[[float], None] | None = None) -> str: ...
    def exit_code(self) -> int | None: ...
    def died(self, during: str) -> EngineFailed: ...
    def stop(self) -> Cleanup: ...


# Makes the engine for a launch plan, logging to the path; the default starts the plan.
Launcher = Callable[[LaunchPlan, Path], EngineProcess]


class Engine:
    """One engine process for one launch plan. Use as a context manager."""

    def __init__(self, launch: LaunchPlan, log_path: Path) -> None:
        self.plan = launch
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.cleanup: Cleanup | None = None
        self.placement: Placement | None = None
        self.policy = HOST

    @property
    def base_url(self) -> str:
        return f"http://{self.plan.host}:{self.plan.port}"

    def start(self) -> None:
        if port_open(self.plan.host, self.plan.port):
            raise EngineFailed(f"port {self.plan.port} on {self.plan.host} is already in use",
                               hint="stop what listens there, or choose another --port")
        argv = resolve_command(self.plan.argv, self.plan.python)
        for path in self.plan.cache_dirs.values():
            Path(path).mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=engine_env(self.plan), cwd=self.plan.cwd,
                start_new_session=True, preexec_fn=orphans.die_with_parent(os.getpid()))
        STARTED.append(self.proc.pid)
        _LIVE.add(self.proc.pid)
        orphans.register(self.policy.pid_dir, self.proc.pid, str(self.log_path))

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def died(self, during: str) -> EngineFailed:
        line = error_line(self.log_path)
        quote = f": {line}" if line else ""
        return EngineFailed(f"the engine exited (code {self.exit_code()}) during {during}{quote}",
                            hint=f"see {self.log_path}")

    def wait_ready(self, timeout: float, tick: Callable[[float], None] | None = None) -> str:
        """Poll /health, then /v1/models; place the processes as the platform profile
        says; return the served model name."""
        name = self._poll_ready(timeout, tick)
        assert self.proc is not None
        # the placement is of an engine core beside its workers (vLLM's); llama-server is one
        if engine_for(self.plan.engine).has_engine_core and \
                profile_for(Platform(self.plan.platform)).colocate_engine_core:
            self.placement = colocate_engine_core(self.proc.pid, session_pids(self.proc.pid))
        return name

    def _poll_ready(self, timeout: float, tick: Callable[[float], None] | None) -> str:
        start = time.monotonic()
        with httpx.Client(base_url=self.base_url, timeout=5.0) as client:
            while True:
                if self.exit_code() is not None:
                    raise self.died("startup")
                elapsed = time.monotonic() - start
                if elapsed > timeout:
                    raise EngineFailed(f"the engine was not ready after {timeout:.0f} s",
                                       hint=f"see {self.log_path}; raise --timeout if it is slow")
                if tick:
                    tick(elapsed)
                name = _served_model(client)
                if name:
                    return name
                time.sleep(POLL_S)

    def stop(self) -> Cleanup:
        """Tear down (idempotent) and check that nothing is left; Ctrl-C waits for it."""
        with sigint_deferred():
            return self._stop()

    def _stop(self) -> Cleanup:
        if self.cleanup is not None or self.proc is None:
            return self.cleanup or Cleanup(exit_code=None, stopped_by="never started",
                                           seconds=0.0, port_closed=True, leftover_pids=[])
        start = time.monotonic()
        proc, pid = self.proc, self.proc.pid

        def gone() -> bool:
            return proc.poll() is not None and not session_pids(pid)

        stopped_by, done = "exited", []
        for name, send, grace in self._stop_steps():
            if gone():
                break
            stopped_by = name
            at = round(time.monotonic() - start, 3)
            detail = send()
            done.append(StopStep(step=name, at_s=at, gone=_wait_until(gone, grace),
                                 detail=detail))
        if gone():
            proc.wait()
            _LIVE.discard(pid)
            orphans.forget(self.policy.pid_dir, pid)
        else:  # the policy forbids SIGKILL: left running, its pid file kept, reported
            stopped_by = "left running"
        self.cleanup = Cleanup(
            pid=pid, exit_code=proc.poll(), stopped_by=stopped_by,
            seconds=round(time.monotonic() - start, 3),
            port_closed=not port_open(self.plan.host, self.plan.port),
            leftover_pids=session_pids(pid), steps=done)
        return self.cleanup

    def _stop_steps(self) -> list[tuple[str, Callable[[], str | None], float]]:
        """The teardown's steps: the recipe's launcher stop where it has one (its stop
        command, its signal to the launcher), else SIGTERM to the server; then SIGTERM
        to the group; SIGKILL of the group only where the host policy (and the recipe's
        stop, where it has one) allows it."""
        assert self.proc is not None
        proc, pid, policy, recipe = self.proc, self.proc.pid, self.policy, self.plan.stop

        def signal_to(sig: signal.Signals) -> Callable[[], str | None]:
            return _quiet(lambda: proc.send_signal(sig))

        steps: list[tuple[str, Callable[[], str | None], float]] = []
        if recipe is None:
            steps.append(("TERM server", signal_to(signal.SIGTERM), policy.grace_s))
        else:
            if recipe.command:
                steps.append(("stop command", lambda: self._stop_command(recipe.grace_s),
                              recipe.grace_s))
            steps.append((f"{recipe.signal} launcher", signal_to(signal.Signals[recipe.signal]),
                          recipe.grace_s))
        steps.append(("TERM group", _quiet(lambda: _killpg(pid, signal.SIGTERM)),
                      policy.group_grace_s))
        if policy.kill and (recipe is None or recipe.kill):
            steps.append(("KILL group", _quiet(lambda: _killpg(pid, signal.SIGKILL)),
                          GROUP_GRACE_S))
        return steps

    def _stop_command(self, timeout: float) -> str:
        """The recipe's stop command, as an argv in the engine's environment and folder:
        its exit and last line of output (the run keeps them in `cleanup.steps`)."""
        assert self.plan.stop is not None and self.plan.stop.command
        argv = self.plan.stop.command
        try:
            done = subprocess.run(resolve_command(argv), capture_output=True, text=True,
                                  timeout=timeout, env=engine_env(self.plan),
                                  cwd=self.plan.cwd, stdin=subprocess.DEVNULL)
        except EngineFailed as e:
            return e.message
        except subprocess.TimeoutExpired:
            return f"no answer in {timeout:g} s"
        except OSError as e:
            return f"did not start ({e.strerror})"
        last = ((done.stdout + done.stderr).strip().splitlines() or [""])[-1][:300]
        return f"exit {done.returncode}" + (f": {last}" if last else "")

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _served_model(client: httpx.Client) -> str | None:
    try:
        if client.get("/health").status_code != 200:
            return None
        models = client.get("/v1/models")
        data = models.json().get("data") if models.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    return str(data[0]["id"]) if data else None


@atexit.register
def _kill_leftovers() -> None:
    """A crash of the registry itself: KILL what it started, where the policy allows."""
    if not HOST.kill:
        return
    for sid in list(_LIVE):
        _killpg(sid, signal.SIGKILL)
        orphans.forget(HOST.pid_dir, sid)


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C until the block ends (only the main thread can handle signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda sig, frame: caught.append(sig))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _quiet(send: Callable[[], None]) -> Callable[[], str | None]:
    """A step that sends a signal: nothing to report."""
    def step() -> str | None:
        send()
        return None

    return step


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_until(done: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.1)
    return done()
