"""Engine log parsing: `vllm.scan_log` streams a server log into facts with evidence."""

from registry.logs.facts import Fact, LogScan, MarkerScan, SpecLogTotals, SpecPhase
from registry.logs.vllm import scan_log

__all__ = ["Fact", "LogScan", "MarkerScan", "SpecLogTotals", "SpecPhase", "scan_log"]
