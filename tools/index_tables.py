#!/usr/bin/env python3
"""Write registry/store/tables.py from the index's SQLModel tables (registry/store/index.py),
so that readers of a SQLite index know its table and column names without importing
SQLAlchemy. tests/test_store_read.py fails when the file is not what this writes.

    python tools/index_tables.py          # rewrite the file
    python tools/index_tables.py --check  # exit 1 when it differs
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TARGET = ROOT / "registry" / "store" / "tables.py"

HEADER = '''"""The index's table and column names, written from its SQLModel tables
(registry/store/index.py) by tools/index_tables.py: do not edit. Readers of a SQLite
index query it through sqlite3 with these names (registry/store/sqlite_read.py)."""

'''


def text() -> str:
    from registry.store.index import TABLES

    lines = [HEADER.rstrip("\n"), "", "COLUMNS: dict[str, tuple[str, ...]] = {"]
    for table in TABLES:
        names = textwrap.wrap(" ".join(f'"{c.name}",' for c in table.columns), 80)
        lines += [f'    "{table.name}": (', *(f"        {n}" for n in names), "    ),"]
    lines.append("}")
    lines.append('"""table -> its columns, in the order of the definition."""')
    return "\n".join(lines) + "\n"


def main() -> int:
    wanted = text()
    if "--check" in sys.argv[1:]:
        return 0 if TARGET.read_text() == wanted else 1
    TARGET.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
