"""llama.cpp's `llama-server` log: `scan_llamacpp` streams it into facts grouped by
server start, model, context and cache, with the request timings counted."""

from registry.engines.llamacpp.logs.scan import scan_llamacpp
from registry.engines.llamacpp.logs.shapes import Cache, Context, LlamaScan, ModelBlock, ServerStart

__all__ = ["Cache", "Context", "LlamaScan", "ModelBlock", "ServerStart", "scan_llamacpp"]
