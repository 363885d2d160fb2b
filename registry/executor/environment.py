"""Host facts for environment.json, gathered without importing torch or vLLM.

The host's own (OS, CPU, memory) from this process; devices from the vendor tools
when they are on PATH; the Python version, package versions and the engine's install
from the interpreter that runs the engine (registry/executor/interpreter.py), which may
be another environment than the registry's. Everything here is a fact about the host,
not the recipe.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from registry import __version__
from registry.executor.interpreter import InterpreterFacts
from registry.formats.rundir import Accelerator, Environment

DEVICE_QUERIES = {
    "nvidia-smi": ["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                   "--format=csv,noheader"],
    "xpu-smi": ["xpu-smi", "discovery", "--dump", "1,2,3,16"],
}


def os_release() -> str | None:
    """PRETTY_NAME of /etc/os-release (or /usr/lib/os-release), read by the standard library."""
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return None


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 2)
    except OSError:
        pass
    return None


def devices() -> dict[str, str]:
    """Raw output of each vendor tool present (short timeout; absence is a fact too)."""
    out = {}
    for tool, argv in DEVICE_QUERIES.items():
        if shutil.which(tool) is None:
            continue
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            out[tool] = (done.stdout or done.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            out[tool] = f"failed: {e}"
    return out


def accelerators(raw: dict[str, str]) -> list[Accelerator]:
    """Device model, driver and memory from nvidia-smi's CSV (`index, name, driver,
    memory.total`); a line of another shape is left to the raw output."""
    found = []
    for line in raw.get("nvidia-smi", "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 4 or not cells[0].isdigit() or not cells[1]:
            continue
        memory = cells[3].removesuffix("MiB").strip()
        found.append(Accelerator(vendor="nvidia", index=int(cells[0]), name=cells[1],
                                 driver=cells[2] or None,
                                 memory_mib=int(memory) if memory.isdigit() else None))
    return sorted(found, key=lambda a: a.index)


def gather(inherited: dict[str, str], engine: InterpreterFacts) -> Environment:
    """The host's facts and the engine interpreter's, with the caller variables the
    engine inherited."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    raw = devices()
    return Environment(
        os=os_release() or platform.platform(), kernel=platform.release(),
        machine=platform.machine(), hostname=platform.node(), registry=__version__,
        python=engine.python, python_implementation=engine.implementation,
        python_executable=engine.executable, python_prefix=engine.prefix,
        cpu=cpu_model(), cpu_count=os.cpu_count(), cpu_affinity=affinity,
        memory_gib=memory_gib(), packages=engine.packages, engine_source=engine.engine_source,
        engine_package=engine.engine_package, devices=raw, accelerators=accelerators(raw),
        inherited_env=inherited)
