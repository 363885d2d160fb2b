#!/usr/bin/env python3
"""Write the module map and the Python API of docs/architecture.md from the code, in
the order of `registry.LAYERS` (`--check`: exit 1 when the file is not what this writes).

A module's line is the first sentence of its docstring; a package's heading line is
the first paragraph of its `__init__.py` docstring. So no module goes unmentioned: a
new one is in the map the next time this runs, and CI runs `--check`. The API section
lists what the command line imports from the library (each name with the first
sentence of its docstring): the public functions and models."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "registry"
DOC = ROOT / "docs" / "architecture.md"
START = "## Module map\n"
API = "### The public functions and models\n"
END = "\n## "
sys.path.insert(0, str(ROOT))

from registry import ENGINE_FOLDERS, LAYERS  # noqa: E402


def docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def first_sentence(text: str) -> str:
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    match = re.match(r"(.+?\.)(\s|$)", paragraph)
    return (match.group(1) if match else paragraph).rstrip(".")


def module_map() -> str:
    out = [START, "\nWritten by `tools/architecture.py` from the docstrings, bottom layer first.\n"]
    for number, layer in enumerate(LAYERS):
        out.append(f"\n### Layer {number}: {', '.join(layer)}\n")
        for unit in layer:
            if unit == ENGINE_FOLDERS:  # one table a folder: each engine is one
                for folder in sorted(p for p in (PACKAGE / "engines").iterdir()
                                     if (p / "__init__.py").is_file()):
                    out += _folder(folder, sorted(folder.rglob("*.py")))
                continue
            folder = PACKAGE / unit
            if not folder.is_dir():
                line = first_sentence(docstring(PACKAGE / f"{unit}.py"))
                out.append(f"\n`registry/{unit}.py`: {line}.\n")
                continue
            # the engines' interface is the folder's own files; each engine's is its layer's
            paths = folder.glob("*.py") if unit == "engines" else folder.rglob("*.py")
            out += _folder(folder, sorted(paths))
    return "".join(out)


def _folder(folder: Path, paths: list[Path]) -> list[str]:
    """A package's heading line and the table of its modules."""
    head = " ".join(docstring(folder / "__init__.py").split("\n\n", 1)[0].split())
    rel = folder.relative_to(ROOT).as_posix()
    out = [f"\n**`{rel}/`**: {head}\n\n| module | job |\n| --- | --- |\n"]
    for path in paths:
        if path.name == "__init__.py" and path.parent == folder:
            continue
        line = first_sentence(docstring(path))
        out.append(f"| `{path.relative_to(ROOT).as_posix()}` | {line} |\n")
    return out


def api_names() -> dict[str, set[str]]:
    """library module -> the names registry/cli imports from it (at any depth)."""
    out: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.startswith("registry.") \
                    and not node.module.startswith("registry.cli"):
                for alias in node.names:  # `from registry.store import home`: a module
                    if _source(f"{node.module}.{alias.name}").exists():
                        out.setdefault(f"{node.module}.{alias.name}", set())
                    else:
                        out.setdefault(node.module, set()).add(alias.name)
    return out


def _source(module: str) -> Path:
    base = PACKAGE.parent / module.replace(".", "/")
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def defined(module: str, seen: frozenset[str] = frozenset()) -> dict[str, str]:
    """Top-level function and class names of a module -> their docstrings; a name the
    module imports from another is followed there (`seen`: modules on the way)."""
    tree = ast.parse(_source(module).read_text())
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out[node.name] = ast.get_docstring(node) or ""
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("registry") and node.module not in seen:
            found = defined(node.module, seen | {module})
            out |= {a.asname or a.name: found[a.name] for a in node.names if a.name in found}
    return out


def api() -> str:
    out = [API, "\nWritten by `tools/architecture.py` from what `registry/cli/` imports.\n"]
    for module, names in sorted(api_names().items()):
        docs = defined(module)
        shown = sorted(n for n in names if n in docs and not n.startswith("_"))
        if not shown:
            continue
        out.append(f"\n`{module}`\n\n")
        out += [f"- `{n}`" + (f": {first_sentence(docs[n])}" if docs[n] else "") + "\n"
                for n in shown]
    return "".join(out)


def _section(text: str, start: str, body: str) -> str:
    before, rest = text.split(start, 1)
    after = rest.split(END, 1)[1] if END in rest else ""
    return before + body + END + after


def rewritten(text: str) -> str:
    return _section(_section(text, START, module_map()), API, api())


def main() -> int:
    text = DOC.read_text()
    new = rewritten(text)
    if "--check" in sys.argv:
        if new != text:
            print("docs/architecture.md is out of date: run tools/architecture.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
