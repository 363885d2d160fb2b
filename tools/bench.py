#!/usr/bin/env python3
"""Run every benchmark in tools/benchmarks/ and print its figures.

Each figure is a ratio (or a wall time) against a baseline measured in the same run,
e.g. hashing vs `openssl dgst -sha256`, log parsing vs `grep -c`. Usage:

    .venv/bin/python tools/bench.py [AREA ...]     # e.g. hashing logparse
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "benchmarks"


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(areas: list[str]) -> None:
    files = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_"))
    for path in files:
        if areas and path.stem not in areas:
            continue
        print(f"## {path.stem}", flush=True)
        for name, value, explanation in load(path).run():
            print(f"{name:<44} {value:>12.3f}  {explanation}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
