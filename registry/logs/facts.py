"""What the log parser returns: facts (each with its line and text) and aggregates."""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen


class Fact(Frozen):
    """One recognised log line: the evidence for whatever is derived from it."""

    kind: str
    line: int = Field(description="1-based line number in the log")
    text: str = Field(description="the message, after the process prefix and logger header")
    proc: str | None = Field(None, description="process label, e.g. Worker_TP1_EP1")
    pid: int | None = None
    values: dict[str, str] = Field(default_factory=dict, description="named parts of the message")


class MarkerScan(Frozen):
    name: str
    pattern: str
    counts: dict[str, int] = Field(description="process (rank) label -> matching messages")
    values: dict[str, list[str]] = Field(description="named group -> distinct values seen")
    first: list[Fact] = Field(description="the first matching line of each process")


class SpecLogTotals(Frozen):
    """Sums over the `SpecDecoding metrics` interval lines."""

    lines: int
    accepted: int
    drafted: int
    first: Fact


class SpecPhase(Frozen):
    """The `SpecDecoding metrics` lines between two boundaries the log shows: a harness's
    `GET /metrics` scrape (its before/after snapshots) or an engine restart. An interval
    line counts where it was printed, even when its interval straddles the boundary."""

    opened_by: Fact | None = Field(description="the boundary line; None: the log's start")
    lines: int = 0
    accepted: int = 0
    drafted: int = 0


class LogScan(Frozen):
    source: str
    bytes: int
    lines: int
    cut_off: bool = Field(description="the last line has no newline: the log was cut off")
    facts: list[Fact] = Field(description="startup facts in log order, a bounded number per kind")
    engine_restarts: int = Field(description="engine starts after the server was first ready")
    kv_usage_peak: Fact | None = None
    spec: SpecLogTotals | None = None
    spec_phases: list[SpecPhase] = Field(default_factory=list, description="after ready, split "
                                         "at /metrics scrapes and restarts (a bounded number)")
    markers: list[MarkerScan] = Field(default_factory=list)
    errors: list[Fact] = Field(default_factory=list, description="distinct ERROR messages (capped)")
    error_lines: int = 0
    exceptions: list[Fact] = Field(default_factory=list, description="last tracebacks' final lines")

    def all(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def first(self, kind: str) -> Fact | None:
        return next((f for f in self.facts if f.kind == kind), None)

    @property
    def empty(self) -> bool:
        """Nothing a vLLM server prints was found."""
        return not (self.facts or self.spec or self.errors or self.exceptions
                    or self.kv_usage_peak)
