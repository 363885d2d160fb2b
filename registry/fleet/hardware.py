"""A host's hardware identity: the name a job asks for and a worker matches, derived
from the executor's host facts (accelerator model and count, else the CPU model): CUDA
cards from `nvidia-smi`, XPU cards from `xpu-smi` (registry/executor/xpu.py, where an
Arc Pro B70 is one model whatever name its xpu-smi gives it: `intel-arc-pro-b70x4`).
A record's identity is its sealed host's, or, for a record imported from a lab's
evidence (no host facts of its own), the device and device count its resolved engine
log names; a record that names neither is refused, never queued for a guessed host.

`REGISTRY_FLEET_HARDWARE` replaces the detected identity. It exists so that tests can
run several "hosts" on one machine; on a real host the detected identity is the truth.
"""

from __future__ import annotations

import os
import re
from typing import Any

from registry.base.model import Frozen
from registry.errors import InvalidInput

ENV_OVERRIDE = "REGISTRY_FLEET_HARDWARE"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")


class Hardware(Frozen):
    identity: str
    detected: bool
    facts: dict[str, str]


def slug(text: str) -> str:
    """`NVIDIA H200` -> `nvidia-h200`: the form identities are written and compared in."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "unknown"


def check_identity(identity: str) -> str:
    """A hardware identity as typed by a user: lower case, no spaces."""
    if not _NAME.match(identity):
        raise InvalidInput(f"hardware identity {identity!r}: use lower case letters, digits, "
                           "'.', '-' and '_' (e.g. nvidia-h200x1, intel-arc-pro-b70x4)",
                           hint="`registry worker --show-hardware` prints this host's")
    return identity


def detect() -> Hardware:
    """This host's identity: `<device>x<count>` of its accelerators, else `cpu-<model>`."""
    from registry.executor.environment import accelerators, cpu_model, devices

    raw = devices()
    found = accelerators(raw)
    facts = {"cpu": cpu_model() or "unknown", "accelerators": str(len(found))}
    if "captured-from" in raw:  # a test's capture, not this host's devices: say so
        facts["devices_captured_from"] = raw["captured-from"]
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        return Hardware(identity=check_identity(override), detected=False, facts=facts)
    return Hardware(identity=identity_of([a.name for a in found], facts["cpu"]),
                    detected=True, facts=facts)


def identity_of(accelerators: list[str], cpu: str | None) -> str:
    """`<device>x<count>` of the accelerators (e.g. nvidia-h200x1), else `cpu-<model>`."""
    from registry.executor.xpu import model_name

    if accelerators:
        names = sorted({model_name(n) or n for n in accelerators})
        return ("+".join(slug(n) for n in names) + f"x{len(accelerators)}")[:100]
    return ("cpu-" + slug(cpu or "unknown"))[:100]


def sealed_hardware(facts: dict[str, Any], device: Any = None, count: Any = None) -> str:
    """The identity of the host a record was sealed on, from its sealed host facts; else
    from the device (and count) its evidence resolved (`platform.device`,
    `parallel.devices`); refused when nothing names the hardware."""
    found = facts.get("accelerators") or []
    names = [str(a.get("name")) for a in found if isinstance(a, dict)]
    cpu = facts.get("cpu") if isinstance(facts.get("cpu"), str) else None
    if names or cpu:
        return identity_of(names, cpu)
    if isinstance(device, str) and device.strip() and device.lower() != "cpu":
        many = count if isinstance(count, int) and 0 < count <= 64 else 1
        return identity_of([device] * many, None)
    raise InvalidInput("the record names no hardware: no host facts of its own, and its "
                       "evidence resolved no device",
                       hint="name the hardware: registry queue add ... --hardware "
                            "intel-arc-pro-b70x4")
