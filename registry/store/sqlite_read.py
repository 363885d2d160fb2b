"""Reading a SQLite index with the standard library's sqlite3: the queries `list`,
`show`, `verify` and `--where` make, with the table and column names of the one
SQLModel definition (registry/store/tables.py), and without importing SQLAlchemy.

It answers exactly as `Index` does (tests/test_store_read.py compares them); writers,
and any index that is not SQLite, go through `Index`.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from registry.store.rows import RecordRow, Rows, unreadable, where_kind, yes
from registry.store.tables import COLUMNS

PREFIX = "sqlite:///"
KEYS = {"records": "id", "identity": "record_id", "results": "record_id"}
CHUNK = 500  # ids per IN (...): far below SQLite's variable limit
VISIBLE = "ledger_commit IS NOT NULL"  # a row shows once its ledger commit exists


def sqlite_path(url: str) -> Path | None:
    """The file of a plain `sqlite:///PATH` URL; None for any other database."""
    return Path(url[len(PREFIX):]) if url.startswith(PREFIX) and "?" not in url else None


class SqliteReader:
    """The read side of `Index` over one SQLite file."""

    def __init__(self, url: str, path: Path) -> None:
        self.url = url
        self.path = path
        self._db: sqlite3.Connection | None = None  # one per reader: a connection costs 0.5 ms

    def pending(self) -> list[str]:
        return [r[0] for r in self._query("SELECT id FROM records WHERE ledger_commit IS NULL")]

    def commit_of(self, record_id: str) -> str | None:
        """The ledger commit the index holds for a record (a hint: readers confirm it)."""
        found = self._query("SELECT ledger_commit FROM records WHERE id = ?", [record_id])
        return found[0][0] if found else None

    def rows(self, where: Sequence[tuple[str, str]] = (),
             limit: int | None = None) -> list[RecordRow]:
        sql = [f"SELECT {_names('records')} FROM records WHERE {VISIBLE}"]
        params: list[Any] = []
        for name, value in where:
            clause, values = _condition(name, value)
            sql.append(f"AND {clause}")
            params += values
        sql.append("ORDER BY created_at DESC, id")
        if limit:
            sql.append("LIMIT ?")
            params.append(limit)
        names = COLUMNS["records"]
        return [RecordRow(**dict(zip(names, r, strict=True)))
                for r in self._query(" ".join(sql), params)]

    def entries(self, ids: Sequence[str] | None = None) -> dict[str, Rows]:
        """record id -> its rows in every table (all visible records when `ids` is None),
        to compare with what the record's signed statement gives."""
        out: dict[str, Rows] = {}
        for table, key in KEYS.items():
            names = COLUMNS[table]
            for row in self._table(table, key, ids):
                values = dict(zip(names, row, strict=True))
                if table == "records":
                    values["imported"] = bool(values["imported"])  # stored as 0/1
                entry = out.setdefault(values[key], {"records": [], "identity": [],
                                                     "results": []})
                entry[table].append(values)
        return out

    def _table(self, table: str, key: str, ids: Sequence[str] | None) -> Iterator[tuple[Any, ...]]:
        select = f"SELECT {_names(table)} FROM {table}"
        if ids is None:
            yield from self._query(select)
            return
        for start in range(0, len(ids), CHUNK):
            chunk = list(ids[start:start + CHUNK])
            marks = ", ".join("?" * len(chunk))
            yield from self._query(f"{select} WHERE {key} IN ({marks})", chunk)

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._connection() as db:
            return db.execute(sql, params).fetchall()

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The reader's connection, opened by its first query (and closed with the
        reader); a missing table or an unreadable file becomes one clear error, as in
        `Index`."""
        try:
            if self._db is None:
                if not self.path.is_file():  # sqlite3 would create an empty one
                    raise unreadable(self.url, "unable to open database file")
                self._db = sqlite3.connect(self.path, timeout=60)
                weakref.finalize(self, self._db.close)
            yield self._db
        except sqlite3.DatabaseError as e:
            raise unreadable(self.url, str(e)) from None


def _names(table: str) -> str:
    # bare names, never "quoted": SQLite reads a quoted name no table has as a string,
    # so an older index lacking a column would answer instead of failing
    return ", ".join(COLUMNS[table])


def _condition(name: str, value: str) -> tuple[str, list[Any]]:
    kind = where_kind(name, value)
    if kind == "imported":
        return "imported = ?", [yes(value)]
    if kind == "column":
        return f"{name} = ?", [value]
    return "id IN (SELECT record_id FROM identity WHERE name = ? AND value = ?)", [name, value]
