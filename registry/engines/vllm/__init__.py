"""vLLM: its server plug-in and argument tables, its log reader (`logs/`) and its resolver
rules (`resolve/`)."""

from registry.engines.vllm.server import VLLM as PLUGIN

__all__ = ["PLUGIN"]
