"""Storage admitted before an engine starts: the filesystem that takes the run's
artifacts and caches must keep a reserve free after the run's estimate, or nothing
starts. The lab's rule (its `check-storage-headroom.py`): free >= reserve + planned,
a read-only filesystem refused, the figures given; fails closed.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import Refused

GIB = 2**30


class Admission(Frozen):
    path: str = Field(description="the folder asked about (its filesystem was measured)")
    free_bytes: int
    planned_bytes: int
    reserve_bytes: int
    read_only: bool
    admitted: bool


def measure(path: Path, planned: int, reserve: int) -> Admission:
    """The filesystem that holds `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    st = os.statvfs(probe)
    free = st.f_bavail * st.f_frsize
    read_only = bool(st.f_flag & os.ST_RDONLY)
    return Admission(path=str(path), free_bytes=free, planned_bytes=planned,
                     reserve_bytes=reserve, read_only=read_only,
                     admitted=not read_only and free >= planned + reserve)


def admit(path: Path, planned: int, reserve: int) -> Admission:
    """`measure`, refused with its figures unless admitted."""
    found = measure(path, planned, reserve)
    if found.read_only:
        raise Refused(f"storage refused: {path} is on a read-only filesystem")
    if not found.admitted:
        raise Refused(f"storage refused: {path} has {_gib(found.free_bytes)} free; the run "
                      f"needs {_gib(planned)} and the reserve {_gib(reserve)} must stay free "
                      f"({_gib(planned + reserve)} in all)",
                      hint="free space there, or lower `run_gib` / `reserve_gib` in the "
                           "host policy (docs/fleet.md)")
    return found


def _gib(n: int) -> str:
    return f"{n / GIB:.3f} GiB ({n} bytes)"
