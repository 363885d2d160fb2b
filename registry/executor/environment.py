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
    "xpu-smi": ["xpu-smi", "discovery", "-j"],
}
XPU_QUERIES = {
    "xpu-smi-topology": ["xpu-smi", "topology", "-m"],
    "lspci": ["lspci", "-vv", "-d", "8086:"],  # Intel's devices: each card's link
    "sycl-ls": ["sycl-ls"],
}
"""Asked only on a host with xpu-smi (registry/executor/xpu.py parses them)."""
CAPTURED_ENV = "REGISTRY_DEVICES_CAPTURED"
"""For tests only: a file of captured tool outputs that stands for this host's devices
(the lab's system manifest, or JSON `{tool: output}`); kept in the facts under
`captured-from`, so a record made with it says so."""


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
    captured = os.environ.get(CAPTURED_ENV)
    if captured:
        return captured_devices(Path(captured))
    queries = dict(DEVICE_QUERIES)
    if shutil.which("xpu-smi"):
        queries.update(XPU_QUERIES)
    out = {}
    for tool, argv in queries.items():
        if shutil.which(argv[0]) is None:
            continue
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
            out[tool] = (done.stdout or done.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            out[tool] = f"failed: {e}"
    return out


def captured_devices(path: Path) -> dict[str, str]:
    """The tools' outputs a capture file holds (test-only: CAPTURED_ENV)."""
    import json

    from registry.errors import InvalidInput
    from registry.executor.xpu import from_manifest

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(f"{CAPTURED_ENV}={path}: cannot read it ({e})") from None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = from_manifest(text)
    if not isinstance(doc, dict) or not all(isinstance(v, str) for v in doc.values()):
        raise InvalidInput(f"{CAPTURED_ENV}={path}: neither a system manifest nor a JSON "
                           "object of tool outputs")
    return {**doc, "captured-from": str(path)}


def accelerators(raw: dict[str, str]) -> list[Accelerator]:
    """Every card the vendor tools list: NVIDIA's, then Intel's (registry/executor/xpu.py)."""
    from registry.executor.xpu import accelerators as xpu

    return [*_nvidia(raw), *xpu(raw)]


def _nvidia(raw: dict[str, str]) -> list[Accelerator]:
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
