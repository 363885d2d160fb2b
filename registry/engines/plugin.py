"""The engine plug-ins by `engine.name`, found by discovery: every sub-package of
registry/engines/ is an engine and names its plug-in `PLUGIN` in its `__init__.py`, so a
third engine is one more folder and no list changes."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import registry.engines
from registry.engines.base import EnginePlugin
from registry.errors import InvalidInput


@cache
def plugins() -> dict[str, EnginePlugin]:
    """Every engine folder's plug-in, imported on first use (by name, not by a static
    import: the engines' own modules sit above the layers that dispatch to them)."""
    found: dict[str, EnginePlugin] = {}
    for info in sorted(pkgutil.iter_modules(registry.engines.__path__), key=lambda i: i.name):
        if info.ispkg:
            plugin: EnginePlugin = importlib.import_module(
                f"{registry.engines.__name__}.{info.name}").PLUGIN
            found[plugin.name] = plugin
    return found


def engine_for(name: str | None) -> EnginePlugin:
    """The plug-in named; None: the engine of evidence that names none."""
    known = plugins()
    if name is None:
        return unnamed()
    if name not in known:
        raise InvalidInput(f"engine.name {name!r}: no such engine",
                           hint=f"engines: {', '.join(sorted(known))}")
    return known[name]


def unnamed() -> EnginePlugin:
    """The engine of evidence that names none: a log no plug-in's signature claims, a
    recipe or launch plan written before the registry had a second engine."""
    return next(p for p in plugins().values() if p.unnamed_default)
