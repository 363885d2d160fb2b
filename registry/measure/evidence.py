"""One engine start's disturbance evidence as a record view shows it: a model of its own,
so that `show` reads it without loading the rule's readers (measure/disturbance.py)."""

from pydantic import Field

from registry.base.model import Frozen


class StartEvidence(Frozen):
    """What one engine start shows about the host it ran on."""

    start: int = Field(description="the start within its record (BenchRow.start)")
    rows: int = Field(description="rows with a decode rate")
    figure: float | None = Field(description="median decode rate of its rows, tok/s")
    spread: float | None = Field(description="IQR of its rows' decode rates over their median")
    samples: int = Field(0, description="GPU samples inside its suite window")
    busy_pct: float | None = Field(None, description="median GPU utilisation over those samples")
    power_w: float | None = Field(None, description="mean power draw over those samples")
    sm_mhz: float | None = Field(None, description="median SM clock over those samples")
    probe_cpu_s: float | None = Field(None, description="the host probe's CPU loop, seconds "
                                      "(mean of before and after the suite; shown, not judged)")
    probe_gib_s: float | None = Field(None, description="the host probe's memory copy, GiB/s")
    stream: str = Field(description="sha256 over its rows' token ids, in row order")
    disturbed: str | None = Field(None, description="why the rule marks it disturbed; None: not")

    @property
    def basis(self) -> str:
        """What the rule could judge this start on."""
        if self.busy_pct is not None:
            return "GPU busy while decoding and row spread"
        return "no GPU samples: row spread and the host probe (shown, not judged)"
