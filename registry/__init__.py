"""registry: a declarative recipe and provenance registry for LLM serving runs.

The public Python API is the library functions the command line calls and the models
they take and return, listed in docs/architecture.md ("Python API"); the rest is
internal. `LAYERS` is the architecture: a
package imports only packages of its own layer or below (tests/test_architecture.py).

The engines are in two places of it. `engines` (registry/engines/base.py, plugin.py) is
the interface every engine plugs into and its discovery, low, beside the recipe it reads.
`engines.*` is each engine's own folder (registry/engines/<name>/: its server, arguments,
log reader, resolver rules, checkpoint format), above the shared readers it builds on;
the layers below reach an engine only through `engines.plugin.engine_for`, which imports
the folder by name at run time.
"""

__version__ = "0.1.0"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("base",),
    ("formats",),
    ("engines", "recipe"),
    ("logs", "checkpoint", "measure"),
    ("resolve", "executor"),
    ("engines.*",),
    ("signing",),
    ("store",),
    ("team", "contracts"),
    ("seal",),
    ("importer",),
    ("reproduce",),
    ("claims",),
    ("ab",),
    ("fleet",),
    ("compare",),
    ("review",),
    ("promote",),
    ("publish",),
    ("report",),
    ("cli",),
)
"""Bottom to top: the pipeline read upwards, from bytes to the command line."""

ENGINE_INTERFACE = ("base", "plugin")
"""The modules of registry/engines/ itself: what every engine implements, and discovery."""
ENGINE_FOLDERS = "engines.*"
"""The unit of every module in a sub-folder of registry/engines/ (one engine each)."""


def layer_unit(module: str) -> str:
    """registry.store.ledger -> store; registry.errors -> errors;
    registry.engines.vllm.logs.scan -> engines.*; registry.engines.plugin -> engines."""
    parts = module.split(".")
    if parts[1:2] == ["engines"] and len(parts) > 2 and parts[2] not in ENGINE_INTERFACE:
        return ENGINE_FOLDERS
    return parts[1] if len(parts) > 1 else parts[0]
