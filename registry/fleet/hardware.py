"""A host's hardware identity: the name a job asks for and a worker matches, derived
from the executor's host facts (accelerator model and count, else the CPU model).

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

    found = accelerators(devices())
    facts = {"cpu": cpu_model() or "unknown", "accelerators": str(len(found))}
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        return Hardware(identity=check_identity(override), detected=False, facts=facts)
    return Hardware(identity=identity_of([a.name for a in found], facts["cpu"]),
                    detected=True, facts=facts)


def identity_of(accelerators: list[str], cpu: str | None) -> str:
    """`<device>x<count>` of the accelerators (e.g. nvidia-h200x1), else `cpu-<model>`."""
    if accelerators:
        names = sorted(set(accelerators))
        return ("+".join(slug(n) for n in names) + f"x{len(accelerators)}")[:100]
    return ("cpu-" + slug(cpu or "unknown"))[:100]


def sealed_hardware(facts: dict[str, Any]) -> str:
    """The identity of the host a record was sealed on, from its sealed host facts."""
    found = facts.get("accelerators") or []
    names = [str(a.get("name")) for a in found if isinstance(a, dict)]
    return identity_of(names, facts.get("cpu") if isinstance(facts.get("cpu"), str) else None)
