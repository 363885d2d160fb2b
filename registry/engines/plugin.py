"""The engine plug-ins by `engine.name`: one module each (registry/engines/vllm/server.py,
registry/engines/llamacpp/server.py); a third engine is one more module listed here."""

from __future__ import annotations

from registry.engines.base import EnginePlugin
from registry.engines.llamacpp.server import LLAMACPP
from registry.engines.vllm.server import VLLM
from registry.errors import InvalidInput

PLUGINS: dict[str, EnginePlugin] = {p.name: p for p in (VLLM, LLAMACPP)}


def engine_for(name: str) -> EnginePlugin:
    if name not in PLUGINS:
        raise InvalidInput(f"engine.name {name!r}: no such engine",
                           hint=f"engines: {', '.join(sorted(PLUGINS))}")
    return PLUGINS[name]
