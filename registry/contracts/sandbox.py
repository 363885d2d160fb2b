"""Running a model's code answer, which is hostile input, where it can do no harm: a
fresh Python in isolated mode (no site, no user paths, no PYTHON* variables), as nobody
when registry runs as root, in namespaces of its own (user, network: not even loopback
is up; mount: every file system remounted read-only but a throwaway folder that is its
home and working directory), bounded in CPU time, memory, file size, open files,
processes and wall time, its whole process group killed at the end.

Where those namespaces cannot be made, the code is not run: the caller's check fails
closed with that reason (a code canary never passes on a host that cannot isolate it).
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen

OUTPUT_LIMIT = 64 << 10  # bytes of stdout and stderr kept
PROCESSES = 16  # per user: where the user already runs more, the answer cannot fork at all


class Ran(Frozen):
    ran: bool = Field(description="False when the sandbox could not be made")
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    reason: str = Field("", description="why it stopped: timeout, killed by signal, ...")


NOBODY = 65534
# Run inside the new namespaces, with the folder as $1: the folder stays writable (its
# own bind mount), every other mount becomes read-only, and a write to / must fail.
CONFINE = (
    'd=$1; shift; mount --bind "$d" "$d" || exit 97; '
    "for m in $(awk '{print $5}' /proc/self/mountinfo); do "
    '[ "$m" = "$d" ] || mount -o remount,bind,ro "$m" 2>/dev/null; done; '
    'if touch /.registry-sandbox-probe 2>/dev/null; then exit 98; fi; '
    'cd "$d" && exec "$@"')
CONFINE_FAILED = {97: "the sandbox folder could not be mounted",
                  98: "the file systems could not be made read-only"}


def isolation() -> list[str] | None:
    """The command prefix that confines a child (above), or None where it cannot be."""
    unshare, python = shutil.which("unshare"), _python()
    if unshare is None or shutil.which("mount") is None:
        return None
    prefix = [unshare, "--user", "--map-root-user", "--net", "--mount", "--", "sh", "-c",
              CONFINE, "sh"]
    with tempfile.TemporaryDirectory(prefix="registry-sandbox-") as folder:
        _own(folder)
        done = subprocess.run([*prefix, folder, python, "-c", ""], capture_output=True,
                              check=False, preexec_fn=_unprivileged)
    return prefix if done.returncode == 0 else None


def _python() -> str:
    """A Python anyone may run (a virtual environment under /root is not one)."""
    return shutil.which("python3", path="/usr/bin:/bin") or sys.executable


def _own(folder: str) -> None:
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)


def _unprivileged() -> None:
    """In the child, before it execs: root becomes nobody."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def run_python(code: str, *, stdin: str = "", timeout_s: float = 5.0,
               memory_mib: int = 256) -> Ran:
    """Run `code` as a script under the limits above; what it printed, and how it ended."""
    prefix = isolation()
    if prefix is None:
        return Ran(ran=False, reason="no network namespace can be made here (unshare): "
                                     "the code is not run")
    with tempfile.TemporaryDirectory(prefix="registry-sandbox-") as folder:
        script = Path(folder) / "answer.py"
        script.write_text(code, encoding="utf-8")
        _own(folder)
        _own(str(script))
        child = subprocess.Popen(
            [*prefix, folder, _python(), "-I", "-S", str(script)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=folder,
            env={"PATH": "/usr/bin:/bin", "HOME": folder, "LC_ALL": "C.UTF-8"},
            start_new_session=True,
            preexec_fn=lambda: _confined(timeout_s, memory_mib))
        try:
            out, err = child.communicate(stdin.encode(), timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        _kill_group(child.pid)  # whatever it started goes too
        if timed_out:
            out, err = child.communicate()
            return Ran(ran=True, reason=f"timeout after {timeout_s:g} s",
                       stdout=_text(out), stderr=_text(err))
    code_ = child.returncode
    if code_ in CONFINE_FAILED:
        return Ran(ran=False, reason=CONFINE_FAILED[code_] + ": the code is not run")
    reason = (f"killed by signal {-code_}" if code_ < 0 else "" if code_ == 0
              else f"exit {code_}")
    return Ran(ran=True, exit_code=code_, stdout=_text(out), stderr=_text(err), reason=reason)


def _confined(timeout_s: float, memory_mib: int) -> None:
    """In the child, before it runs anything: hard limits it cannot raise again, and
    no longer root."""
    cpu = max(1, int(timeout_s))
    for limit, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory_mib << 20),
                         (resource.RLIMIT_FSIZE, 1 << 20), (resource.RLIMIT_NOFILE, 64),
                         (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, PROCESSES)):
        resource.setrlimit(limit, (value, value))
    _unprivileged()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _text(data: bytes | None) -> str:
    return (data or b"")[:OUTPUT_LIMIT].decode("utf-8", errors="replace")
