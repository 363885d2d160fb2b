"""The host policy a worker follows: the lab's host-safety rules by default
(lab-workflow.md section 5; docs/fleet.md):

- an engine fault is not retried: the run stops, its evidence is kept, one bounded
  health probe runs (the device tool, then the kernel log of the last
  `kernel_log_minutes`, kept with the probe), and the host is held for a person
  (the hold file; no worker on the host takes a job until a person removes it). Retrying is opt-in
  (`retry_engine_faults`);
- a stop is SIGTERM, a grace period, then SIGKILL only where `stop.kill` allows, each
  step recorded in the run (registry/executor/engine.py); a hard kill is itself a
  fault: the host is held (`hard_kill_is_fault`);
- storage is admitted before a start (registry/executor/storage.py);
- one lane per host: one job's engine at a time (an exclusive lock on `lane_lock`);
- an engine never outlives its worker (registry/executor/orphans.py).

A policy file is TOML with these fields (`registry worker --policy FILE`).
"""

from __future__ import annotations

import fcntl
import json
import platform
import shutil
import subprocess
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from pydantic import Field, ValidationError

from registry.base.model import Frozen
from registry.errors import InvalidInput, Refused
from registry.executor.engine import StopPolicy
from registry.executor.kernellog import KernelLog, read_kernel_log
from registry.executor.orphans import default_dir
from registry.executor.storage import GIB, Admission, admit


class HostPolicy(Frozen):
    retry_engine_faults: bool = Field(False, description="run a job again after its engine "
                                                         "faulted (opt-in; the lab: never)")
    stop: StopPolicy = Field(default_factory=StopPolicy)
    hard_kill_is_fault: bool = Field(True, description="an engine that needed SIGKILL holds "
                                                       "the host (the lab's rule)")
    reserve_gib: float = Field(50.0, ge=0, description="left free after the run (the lab's)")
    run_gib: float = Field(2.0, ge=0, description="a run's artifacts and caches, planned")
    probe: list[str] | None = Field(None, description="the health probe's argv; default: "
                                                      "the host's device tool")
    probe_timeout_s: float = Field(60.0, gt=0, le=600)
    kernel_log_minutes: int = Field(60, ge=1, le=1440, description="how far back the probe "
                                                                  "reads the kernel log")
    kernel_log_lines: int = Field(200, ge=1, le=10_000, description="the most kernel log "
                                                                  "lines it keeps")
    lane_lock: Path = Field(default_factory=lambda: default_dir() / "lane.lock")
    hold_file: Path = Field(default_factory=lambda: default_dir() / "host-held.json")


def load_policy(path: Path | None) -> HostPolicy:
    """The policy file's (TOML), else the lab's rules."""
    if path is None:
        return HostPolicy()
    try:
        return HostPolicy.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise InvalidInput(f"host policy {path}: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(f"host policy {path}: {where}: {first['msg']}") from None


def admit_storage(policy: HostPolicy, work_dir: Path) -> Admission:
    """Room for the run before anything starts (refused with the figures)."""
    return admit(work_dir, int(policy.run_gib * GIB), int(policy.reserve_gib * GIB))


@contextmanager
def lane(policy: HostPolicy) -> Iterator[None]:
    """The host's one lane, held for a job (waits while another worker's job runs; the
    kernel frees it when its holder dies)."""
    policy.lane_lock.parent.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = policy.lane_lock.open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()


def held(policy: HostPolicy) -> dict[str, Any] | None:
    """The hold a fault left on this host, if any (a person removes the file)."""
    try:
        doc = json.loads(policy.hold_file.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"reason": f"unreadable hold file {policy.hold_file}"}
    return doc if isinstance(doc, dict) else {"reason": "hold file of an unknown shape"}


def refuse_if_held(policy: HostPolicy) -> None:
    hold = held(policy)
    if hold is not None:
        raise Refused(f"this host is held for a person since an engine fault: "
                      f"{hold.get('reason')}",
                      hint=f"check the host (kernel log, devices), then remove "
                           f"{policy.hold_file}")


def hold(policy: HostPolicy, reason: str, job: int, evidence: str) -> None:
    policy.hold_file.parent.mkdir(parents=True, exist_ok=True)
    policy.hold_file.write_text(json.dumps({
        "reason": reason, "job": job, "evidence": evidence, "host": platform.node(),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=2) + "\n")


class ProbeResult(Frozen):
    argv: list[str]
    passed: bool
    exit_code: int | None
    seconds: float
    output: str = Field(description="its last 2,000 characters")
    kernel_log: KernelLog | None = Field(None, description="the kernel's lines around the "
                                                           "fault, or why they were unreadable")


def health_probe(policy: HostPolicy) -> ProbeResult:
    """One bounded probe: the policy's command, else the host's device tool, else
    `true` on a host without one (nothing to probe but that the host runs a process);
    then the kernel log, bounded in time and lines ("not readable" where it is not)."""
    argv = policy.probe or _device_probe()
    start = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=policy.probe_timeout_s, stdin=subprocess.DEVNULL)
        code: int | None = done.returncode
        output = (done.stdout + done.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        code, output = None, f"timed out after {policy.probe_timeout_s:.0f} s"
    except OSError as e:
        code, output = None, f"did not start: {e}"
    kernel = read_kernel_log(policy.kernel_log_minutes * 60, policy.kernel_log_lines,
                             min(policy.probe_timeout_s, 30.0))
    return ProbeResult(argv=argv, passed=code == 0, exit_code=code,
                       seconds=round(time.monotonic() - start, 3), output=output,
                       kernel_log=kernel)


def _device_probe() -> list[str]:
    for argv in (["xpu-smi", "discovery"], ["nvidia-smi", "-L"]):
        if shutil.which(argv[0]):
            return argv
    return ["true"]

