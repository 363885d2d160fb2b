"""llama.cpp's `llama-server` log: `scan_llamacpp` streams it into facts grouped by
server start, model, context and cache, with the request timings counted."""

from registry.logs.llamacpp.scan import scan_llamacpp
from registry.logs.llamacpp.shapes import Cache, Context, LlamaScan, ModelBlock, ServerStart

__all__ = ["Cache", "Context", "LlamaScan", "ModelBlock", "ServerStart", "scan_llamacpp"]
