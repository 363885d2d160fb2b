"""What an A/B holds: each start sealed, each suite's boost with its interval, the verdict
(the runner fills it; the attestation and the command line read it)."""

from __future__ import annotations

from pydantic import Field

from registry.ab.comparable import Comparability
from registry.base.model import Frozen
from registry.formats.rundir import LaunchPlan
from registry.measure.starts import LEVEL, NOISE_PCT, PairedInterval, StartFigure
from registry.reproduce.why import Why


class AbStart(Frozen):
    start: int
    side: str
    run_dir: str
    record: str = Field(description="the record this start was sealed as")
    figures: list[StartFigure] = Field(description="one per suite")


class SuiteBoost(Frozen):
    """One suite's comparison: each side's figure, the paired ratio, the boost."""

    suite: str
    formula: str
    a: float | None = Field(description="geometric mean of A's start figures, tok/s")
    b: float | None
    a_starts: list[float | None]
    b_starts: list[float | None]
    ratio: float | None = Field(description="B/A over paired starts (geometric mean)")
    boost_pct: float | None = Field(description="100 * (B - A) / A from the paired ratio")
    low_pct: float | None = Field(description="the boost's interval")
    high_pct: float | None = None
    delta_tok_s: float | None = Field(description="B - A, absolute")
    interval: PairedInterval | None = None
    verdict: str = Field(description="faster | slower | no difference | inconclusive")
    why: Why | None = Field(None, description="the starts used, those kept out as disturbed, "
                                              "and why it decided or not")


class AbResult(Frozen):
    a: str = Field(description="side A as given")
    b: str
    records: dict[str, str | None] = Field(description="side -> the record it stands for")
    comparability: Comparability
    order: list[str] = Field(description="the sides in start order")
    starts_per_side: int
    max_starts: int | None = Field(None, description="--max-starts: most starts a side")
    look_level: float | None = Field(None, description="each look's interval level (the "
                                     "error spent over the looks)")
    stopped: str | None = Field(None, description="why no further pair was started")
    level: float = LEVEL
    noise_pct: float = NOISE_PCT
    dry_run: bool = False
    plans: dict[str, LaunchPlan] = Field(default_factory=dict)
    starts: list[AbStart] = Field(default_factory=list)
    outcome: Comparability | None = Field(None, description="the outputs of A and B compared "
                                                            "(the quality-outcome axis)")
    suites: list[SuiteBoost] = Field(default_factory=list)
    verdict: str = Field("planned", description="the suites' verdict when they agree, else "
                                                "inconclusive; `not comparable`; `planned`")
    verification: str | None = Field(None, description="the signed comparison attestation")

    @property
    def comparable(self) -> bool:
        """The sides match on every axis not named, and so do their outputs once run."""
        return self.comparability.comparable and (self.outcome is None
                                                  or self.outcome.comparable)
