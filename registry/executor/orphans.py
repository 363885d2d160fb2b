"""Engines that outlive what started them, and how the next one on the host reaps them.

Two guards, since a worker killed with SIGKILL runs no cleanup of its own:

- the engine's process asks the kernel for SIGTERM when its parent dies
  (`prctl(PR_SET_PDEATHSIG)`, set in the child before it runs the engine);
- a pid file per live engine (`engine-<pid>.json` in the host's pid folder) names the
  engine and its owner, each with its start time (field 22 of /proc/<pid>/stat), so
  that a reused pid is never taken for either. The file goes when the engine is torn
  down; one that stays names an engine whose owner died first. `reap` (run by every
  worker before it takes a job) stops such an engine: SIGTERM to its process group, a
  grace period, then SIGKILL only where the policy allows. By pid, never by pattern.

An engine in a container is more than its process: the runtime keeps the container
running when its client dies (conmon is not in the client's group). So its pid file
also names the container (runtime, exact name, and its id once the runtime wrote it),
and `reap` stops that container first, by id, through its runtime and under the same
policy, and only one whose `registry.owner` label names the dead owner (a reused name
is never taken for it); then the client's group as above.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.executor import runtime

PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def default_dir() -> Path:
    """The host's pid folder: per user, shared by every registry process of that user."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return Path(base) / f"registry-engines-{os.getuid()}"


def die_with_parent(parent: int) -> Callable[[], None]:
    """The child's first step (Popen's preexec_fn): SIGTERM when the parent dies; a
    parent already gone by then means no engine at all. libc is looked up here, in the
    parent: the child, forked from a threaded process, only calls it."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl, reset = libc.prctl, libc.signal
    reset.argtypes, reset.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_void_p

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)
        # a worker started under nohup or `&` ignores SIGINT/SIGHUP, and an ignored signal
        # stays ignored across exec: the engine must hear the stop signal the recipe names
        for stop in STOP_SIGNALS:
            reset(int(stop), None)  # SIG_DFL

    return arm


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot; None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[19]) if fields[0] not in ("Z", "X") else None


def alive(pid: int, started: int | None) -> bool:
    return started is not None and start_time(pid) == started


def register(folder: Path, pid: int, log: str,
             container: dict[str, str | None] | None = None) -> None:
    """Write (or rewrite) the engine's pid file; `container`: runtime, name, id."""
    folder.mkdir(parents=True, exist_ok=True)
    owner = os.getpid()
    doc = {"pid": pid, "started": start_time(pid), "owner": owner,
           "owner_started": start_time(owner), "log": log, "container": container}
    path = folder / f"engine-{pid}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


def forget(folder: Path, pid: int) -> None:
    with suppress(OSError):
        (folder / f"engine-{pid}.json").unlink()


class Reaped(Frozen):
    """An orphaned engine found on the host, and how it was stopped."""

    pid: int
    owner: int
    log: str | None = None
    container: str | None = Field(None, description="its container's id (or exact name)")
    steps: list[str]
    gone: bool = Field(description="its process group, and its container where it had one")


def reap(folder: Path, grace_s: float = 10.0, kill: bool = True) -> list[Reaped]:
    """Stop every engine whose pid file outlived its owner; drop files of engines gone."""
    out = []
    for path in sorted(folder.glob("engine-*.json")) if folder.is_dir() else []:
        try:
            doc = json.loads(path.read_text())
            pid, owner = int(doc["pid"]), int(doc["owner"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a file being written, or not ours: left alone
        if alive(owner, doc.get("owner_started")):
            continue  # its owner runs it
        box, box_steps, box_gone = _stop_container(doc, grace_s, kill)
        if not alive(pid, doc.get("started")) and not box_steps:
            if box_gone:
                path.unlink(missing_ok=True)
            continue
        steps, gone = _stop_group(pid, doc.get("started"), grace_s, kill)
        if gone and box_gone:
            path.unlink(missing_ok=True)
        out.append(Reaped(pid=pid, owner=owner, log=doc.get("log"), container=box,
                          steps=box_steps + steps, gone=gone and box_gone))
    return out


def _stop_container(doc: dict[str, Any], grace_s: float,
                    kill: bool) -> tuple[str | None, list[str], bool]:
    """The dead owner's container, stopped by id: (its ref, the steps, whether gone)."""
    box = doc.get("container")
    if not isinstance(box, dict) or box.get("runtime") not in ("podman", "docker"):
        return None, [], True
    kind = str(box["runtime"])
    ref = str(box.get("id") or box.get("name") or "")
    if not ref or not runtime.exists(kind, ref):
        return ref or None, [], True
    want = f"{doc.get('owner')}:{doc.get('owner_started')}"
    if runtime.label(kind, ref, runtime.OWNER_LABEL) != want:
        return ref, [f"{kind} container {ref} is not the dead owner's: left alone"], True
    cid = ref if box.get("id") else _id_of(kind, ref)
    steps, gone = runtime.stop(kind, cid, grace_s, kill)
    return cid, steps, gone


def _id_of(kind: str, name: str) -> str:
    """A container named exactly so (the pid file had no id yet): its id."""
    ids = runtime.labelled(kind, runtime.RUN_LABEL, name)
    return ids[0] if len(ids) == 1 else name


def _stop_group(pid: int, started: int | None, grace_s: float,
                kill: bool) -> tuple[list[str], bool]:
    steps = []
    for sig, allowed in ((signal.SIGTERM, True), (signal.SIGKILL, kill)):
        if not allowed or not alive(pid, started):
            break
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)  # the engine leads its own session and group
        steps.append(f"{sig.name} group {pid}")
        deadline = time.monotonic() + grace_s
        while alive(pid, started) and time.monotonic() < deadline:
            time.sleep(0.1)
    return steps, not alive(pid, started)
