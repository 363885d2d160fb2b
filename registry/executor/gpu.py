"""GPU samples through a run's suite: clocks, power, temperature, utilisation and the
clock-event (throttle) reasons, from `nvidia-smi` when the host has it, kept in
`gpu-samples.csv`, so a verdict can say that the GPU throttled.

`nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits -lms 250` runs beside the
suite in its own process and is stopped after it; its lines are the file, untouched.
No NVML binding is imported: the tool is what every NVIDIA host has.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen

FIELDS = ("timestamp", "index", "clocks.sm", "clocks.mem", "power.draw", "temperature.gpu",
          "utilization.gpu", "memory.used", "clocks_event_reasons.active")
PERIOD_MS = 250
# nvidia-smi's clock-event reason bits that slow a busy GPU (the idle bit 0x1 and the
# applications-clocks setting 0x2 are not throttling)
THROTTLE = {0x4: "sw power cap", 0x8: "hw slowdown", 0x20: "sw thermal slowdown",
            0x40: "hw thermal slowdown", 0x80: "hw power brake slowdown"}


class GpuSample(Frozen):
    at: str
    index: int
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    power_w: float | None = None
    temperature_c: float | None = None
    utilization_pct: float | None = None
    reasons: int = Field(0, description="clocks_event_reasons.active bit mask")


class GpuSummary(Frozen):
    samples: int
    busy: int = Field(description="samples with utilisation above 50%")
    sm_mhz_min_busy: float | None = None
    sm_mhz_max: float | None = None
    power_w_max: float | None = None
    temperature_c_max: float | None = None
    throttled: list[str] = Field(default_factory=list, description="reasons seen while busy")
    first_throttle: str | None = Field(None, description="time of the first throttled sample")


class Sampler:
    """nvidia-smi sampling into `path` between start() and stop(); nothing without it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        tool = shutil.which("nvidia-smi")
        if tool is None:
            return
        with self.path.open("wb") as out:
            self.process = subprocess.Popen(
                [tool, f"--query-gpu={','.join(FIELDS)}", "--format=csv,noheader,nounits",
                 f"-lms={PERIOD_MS}"], stdout=out, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def parse(text: str) -> list[GpuSample]:
    """The sampler's lines (or a `--format=csv` capture with units and a header)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if line.startswith("#") or len(cells) < len(FIELDS) - 1 or "timestamp" in line:
            continue
        if len(cells) == len(FIELDS) - 1:  # captured without the index column
            cells.insert(1, "0")
        out.append(GpuSample(at=cells[0], index=int(_number(cells[1]) or 0),
                             sm_mhz=_number(cells[2]), mem_mhz=_number(cells[3]),
                             power_w=_number(cells[4]), temperature_c=_number(cells[5]),
                             utilization_pct=_number(cells[6]),
                             reasons=int(cells[8], 16) if cells[8].startswith("0x") else 0))
    return out


def summary(samples: list[GpuSample]) -> GpuSummary:
    busy = [s for s in samples if (s.utilization_pct or 0) > 50]
    throttled = [s for s in busy if s.reasons & sum(THROTTLE)]

    def top(values: list[float | None]) -> float | None:
        kept = [v for v in values if v is not None]
        return max(kept) if kept else None

    sm_busy = [s.sm_mhz for s in busy if s.sm_mhz is not None]
    return GpuSummary(
        samples=len(samples), busy=len(busy), sm_mhz_min_busy=min(sm_busy) if sm_busy else None,
        sm_mhz_max=top([s.sm_mhz for s in samples]),
        power_w_max=top([s.power_w for s in samples]),
        temperature_c_max=top([s.temperature_c for s in samples]),
        throttled=sorted({name for s in throttled for bit, name in THROTTLE.items()
                          if s.reasons & bit}),
        first_throttle=throttled[0].at if throttled else None)


def _number(cell: str) -> float | None:
    try:
        return float(cell.split()[0])
    except (ValueError, IndexError):
        return None
