"""What a Python interpreter says about itself, printed as one JSON object: run as a script
by the engine's interpreter (`python pyfacts.py NAME...`), standard library only.

The engine may live in another environment than the registry (`engine.python`), where
the registry is not installed: this file is run by path, imports nothing of the
registry, and never imports the engine or torch (their versions come from installed
metadata; the engine package's folder from `importlib.util.find_spec`, which does not
run the package). The command line names the engine's import package (empty: none, a
binary engine), its distributions (comma-separated, in the order they are looked for),
then the distributions to report.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import json
import os
import platform
import sys
from typing import Any


def packages(names: list[str]) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def engine_source(distributions: list[str]) -> dict[str, Any] | None:
    """PEP 610 direct_url.json of the engine: where a source build came from."""
    for name in distributions:
        try:
            text = metadata.distribution(name).read_text("direct_url.json")
        except metadata.PackageNotFoundError:
            continue
        if text:
            return {"distribution": name, **json.loads(text)}
    return None


def engine_package(package: str, distributions: list[str]) -> dict[str, Any] | None:
    """The installed engine package's folder, and the distribution that put it there
    (matched by location: `packages_distributions()` would read every distribution's
    file list, a second on a large environment)."""
    spec = importlib.util.find_spec(package) if package else None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = next(iter(spec.submodule_search_locations))
    for name in distributions:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if os.path.realpath(str(dist.locate_file(package))) == os.path.realpath(folder):
            return {"path": folder, "distribution": name, "version": dist.version}
    return {"path": folder, "distribution": None, "version": None}


def facts(package: str, distributions: list[str], names: list[str]) -> dict[str, Any]:
    return {"executable": sys.executable, "prefix": sys.prefix,
            "python": sys.version.split()[0],
            "implementation": platform.python_implementation(),
            "packages": packages(names), "engine_source": engine_source(distributions),
            "engine_package": engine_package(package, distributions)}


if __name__ == "__main__":
    print(json.dumps(facts(sys.argv[1], [d for d in sys.argv[2].split(",") if d],
                           sys.argv[3:])))
