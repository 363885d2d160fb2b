"""What every engine's log reader returns (facts with evidence), and the Prometheus
`/metrics` text format; each engine's own reader is in registry/engines/<name>/logs/."""

from registry.logs.facts import Fact, LogScan, MarkerScan, SpecLogTotals, SpecPhase

__all__ = ["Fact", "LogScan", "MarkerScan", "SpecLogTotals", "SpecPhase"]
