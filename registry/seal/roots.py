"""How a record names a source or launcher path: relative to the run's roots (the run
directory, the recipe's folder, the models folder, the checkpoint), never as the
sealing machine's absolute path.

A statement is pushed to teammates and kept for good: `/home/alice/lab/serve.sh` says
who sealed it and where, and differs between two checkouts of the same tree, so the
same run sealed from two places would read as two. A path under a root (or a folder
above one, such as the git tree holding the recipe) is kept relative to it, with the
root's name; an absolute path under none of them is named by its base name only,
marked `outside` (its digest or commit, kept beside it, is what identifies it).
Records sealed before this keep their absolute paths and verify unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from registry.formats.record import OUTSIDE, Source

OUTSIDE_NOTE = "outside the run, recipe and model folders: named by its base name only"


def name_path(path: str, roots: Mapping[str, Path]) -> tuple[str | None, str]:
    """(root, path relative to it) for an absolute `path`; the deepest root that holds it
    (or lies below it) wins. A relative path or one holding a variable is returned as it
    is, with no root: it names no machine."""
    if not os.path.isabs(path) or "$" in path:
        return None, path
    target = Path(os.path.realpath(path))
    best: tuple[int, str, str] | None = None
    for name, root in roots.items():
        base = Path(os.path.realpath(root))
        if target.is_relative_to(base) or base.is_relative_to(target):
            relative = os.path.relpath(target, base)
            depth = len(base.parts)
            if best is None or depth > best[0]:
                best = (depth, name, Path(relative).as_posix())
    if best is None:
        return OUTSIDE, target.name or "/"
    return best[1], best[2]


def portable(source: Source, roots: Mapping[str, Path]) -> Source:
    """`source` with its path named against `roots` (see the module docstring)."""
    root, path = name_path(source.path, roots)
    if root is None:
        return source
    note = source.note
    if root == OUTSIDE:
        note = f"{note}; {OUTSIDE_NOTE}" if note else OUTSIDE_NOTE
    return source.model_copy(update={"root": root, "path": path, "note": note})
