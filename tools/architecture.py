#!/usr/bin/env python3
"""Write the module map of docs/architecture.md from the module docstrings, in the
order of `registry.LAYERS` (`--check`: exit 1 when the file is not what this writes).

A module's line is the first sentence of its docstring; a package's heading line is
the first paragraph of its `__init__.py` docstring. So no module goes unmentioned: a
new one is in the map the next time this runs, and CI runs `--check`."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "registry"
DOC = ROOT / "docs" / "architecture.md"
START = "## Module map\n"
END = "\n## "
sys.path.insert(0, str(ROOT))

from registry import LAYERS  # noqa: E402


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
            folder = PACKAGE / unit
            if not folder.is_dir():
                line = first_sentence(docstring(PACKAGE / f"{unit}.py"))
                out.append(f"\n`registry/{unit}.py`: {line}.\n")
                continue
            head = " ".join(docstring(folder / "__init__.py").split("\n\n", 1)[0].split())
            out.append(f"\n**`registry/{unit}/`**: {head}\n\n| module | job |\n| --- | --- |\n")
            for path in sorted(folder.rglob("*.py")):
                if path.name == "__init__.py" and path.parent == folder:
                    continue
                rel = path.relative_to(ROOT).as_posix()
                out.append(f"| `{rel}` | {first_sentence(docstring(path))} |\n")
    return "".join(out)


def rewritten(text: str) -> str:
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1] if END in rest else ""
    return before + module_map() + END + after


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
