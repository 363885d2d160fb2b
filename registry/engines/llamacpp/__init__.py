"""llama.cpp: its `llama-server` plug-in, ggml types and argument table, its log reader
(`logs/`), its resolver rules (`resolve/`), the GGUF checkpoint format and its KV
arithmetic (nothing here runs or imports llama.cpp)."""

from registry.engines.llamacpp.server import LLAMACPP as PLUGIN

__all__ = ["PLUGIN"]
