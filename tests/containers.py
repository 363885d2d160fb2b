"""Containers for tests on podman with runc (docs/containers.md; the sandbox's limits:
runc, explicit ulimits, the host's network).

`host_python_image()`: an image with an empty root filesystem, made by `podman import`
(no image registry is reachable); a container of it runs the host's own Python by
mounting /usr and /lib read-only, so the scripted engine (tests/scripted_engine.py)
serves from inside a real container. `leftovers(session)` and `remove(ids)`: the
session-end check of tests/conftest.py.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

from registry.executor import orphans, runtime

TAG = "localhost/registry-test-host-python:1"
LIMITS = {"nofile": "1024:1024", "nproc": "1024:1024"}
HOST_MOUNTS = ["/usr:/usr:ro", "/lib:/lib:ro", "/lib64:/lib64:ro"]


def podman() -> bool:
    return shutil.which("podman") is not None and Path("/usr/sbin/runc").exists()


def host_python_image() -> str:
    """The pinned reference of the empty image (imported once per machine)."""
    if subprocess.run(["podman", "image", "exists", TAG]).returncode != 0:
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w") as tar:
            for name in ("usr", "lib", "lib64", "tmp", "proc", "sys", "dev", "etc"):
                info = tarfile.TarInfo(name)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                tar.addfile(info)
        subprocess.run(["podman", "import", "--quiet", "--change",
                        "ENV PATH=/usr/bin:/bin", "-", TAG], input=data.getvalue(),
                       check=True, capture_output=True)
    digest = subprocess.run(["podman", "image", "inspect", TAG, "--format", "{{.Digest}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    return f"{TAG}@{digest}"


def leftovers(session: str) -> list[str]:
    """Registry containers this session left: those labelled with its session, and those
    whose owner process is gone (an orphan, whoever made it); a live owner's container
    of another session is left alone."""
    if not podman():
        return []
    found = []
    for cid in runtime.labelled("podman", runtime.RUN_LABEL):
        owner = runtime.label("podman", cid, runtime.OWNER_LABEL) or ""
        pid, _, started = owner.partition(":")
        ours = runtime.label("podman", cid, runtime.SESSION_LABEL) == session
        dead = pid.isdigit() and not orphans.alive(int(pid), int(started)
                                                   if started.isdigit() else None)
        if ours or dead:
            found.append(cid)
    return found


def remove(ids: list[str]) -> None:
    for cid in ids:  # by id, never by a pattern
        subprocess.run(["podman", "rm", "--force", "--time", "0", cid], capture_output=True,
                       timeout=60)
