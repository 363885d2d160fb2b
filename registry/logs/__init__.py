"""Engine log parsing: `vllm.scan_log` streams a server log into facts with evidence."""

from registry.logs.facts import Fact, LogScan, MarkerScan, SpecLogTotals
from registry.logs.vllm import scan_log

__all__ = ["Fact", "LogScan", "MarkerScan", "SpecLogTotals", "scan_log"]
