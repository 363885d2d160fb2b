"""vLLM's server log: `scan_log` streams it into facts with evidence."""

from registry.engines.vllm.logs.scan import scan_log

__all__ = ["scan_log"]
