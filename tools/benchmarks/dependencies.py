"""What installing the registry costs: its dependency closure and the space it takes
installed, for the working tree and, given, an earlier tree (read from each tree's
pyproject.toml; sizes from the distributions installed in this interpreter's
environment, so run it with the project's venv):

    .venv/bin/python tools/benchmarks/dependencies.py [EARLIER_TREE]

Measured 2026-12-01 in the shared venv: main (5906ff5) 35 packages, 190 MiB; with
the Vega bundle vendored instead of vl-convert-python (84 MiB of JavaScript runtime),
34 packages, 106 MiB. The wheel itself grows from 322 KB to 656 KB (the bundle,
0.9 MB uncompressed).
"""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def closure(requirements: list[str]) -> dict[str, metadata.Distribution | None]:
    seen: dict[str, metadata.Distribution | None] = {}
    todo = [r for r in requirements if "extra ==" not in r]
    while todo:
        name = re.split(r"[ ;<>=!~\[]", todo.pop().strip(), maxsplit=1)[0].lower()
        name = name.replace("_", "-")
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            seen[name] = None
            continue
        seen[name] = dist
        todo += [r for r in dist.requires or [] if "extra ==" not in r]
    return seen


def report(tree: Path) -> str:
    requirements = tomllib.loads((tree / "pyproject.toml").read_text())["project"][
        "dependencies"]
    found = closure(requirements)
    size = sum(f.size or 0 for d in found.values() if d for f in d.files or [])
    absent = sorted(n for n, d in found.items() if d is None)
    return (f"{tree}: {len(found) - len(absent)} packages, {size / 2**20:.0f} MiB installed"
            + (f" (not installed here: {', '.join(absent)})" if absent else ""))


if __name__ == "__main__":
    for tree in [*(Path(a) for a in sys.argv[1:]), ROOT]:
        print(report(tree))
