"""registry: a declarative recipe and provenance registry for LLM serving runs.

The public Python API is the library functions the command line calls and the models
they take and return, listed in docs/architecture.md ("Python API"); the rest is
internal. `LAYERS` is the architecture: a
package imports only packages of its own layer or below (tests/test_architecture.py).
"""

__version__ = "0.1.0"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("base",),
    ("formats",),
    ("engines", "recipe"),
    ("logs", "checkpoint", "measure"),
    ("resolve", "executor"),
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
