"""The SQL index: what `list`, `show` and `--where` query. SQLite by default,
PostgreSQL when `$REGISTRY_DATABASE_URL` says so. The tables are SQLModel models;
queries are SQLAlchemy Core over their tables (no ORM session on the read path).
The index is a cache of the ledger, never a source: `rebuild` recreates it from the
ledger alone, and readers check every row against its signed statement. These models
are the one definition of the tables; readers of a SQLite index query it through
sqlite3 with the names written from them into registry/store/tables.py
(registry/store/sqlite.py), so `list` and `show` never import SQLAlchemy.

A seal inserts a record's rows in one transaction with `ledger_commit` NULL, then
sets it once the ledger commit exists. Readers only see rows with a commit, so a
crash between the two steps leaves an invisible row that the next writer (or
`reindex`) settles against the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from sqlalchemy import (
    Index as SqlIndex,
)
from sqlalchemy import Table, Text, create_engine, delete, event, select, text, update
from sqlalchemy.exc import DatabaseError, OperationalError, ProgrammingError
from sqlmodel import Field, SQLModel

from registry.store.home import Home
from registry.store.rows import (  # the entry models, light for readers; named here too
    COLUMNS,
    RecordRow,
    Rows,
    entry_differences,
    entry_rows,
    unreadable,
    value_text,
    where_kind,
    yes,
)

PENDING = "ledger_commit IS NULL"


class RecordEntry(SQLModel, table=True):
    """One row per record: what `list` shows and sorts by."""

    __tablename__ = "records"
    # pending: the rows a crashed seal left (ledger_commit NULL), which every reader asks
    # for first; indexed apart, so that asking costs no scan of the table (2-5 ms at
    # 10,000 records). An index an older registry made lacks it until `reindex`.
    __table_args__ = (SqlIndex("ix_records_created_at", "created_at"),
                      SqlIndex("ix_records_pending", "id", sqlite_where=text(PENDING),
                               postgresql_where=text(PENDING)))

    id: str = Field(primary_key=True, max_length=64)
    created_at: str = Field(max_length=40)
    lane: str | None = Field(None, max_length=200)
    recipe: str | None = Field(None, max_length=200)
    parent: str | None = Field(None, max_length=64)
    imported: bool
    signer: str | None = Field(None, max_length=64)
    summary: str = Field(sa_type=Text)
    model: str | None = Field(None, max_length=200)
    weights: str | None = Field(None, max_length=100)
    kv_cache: str | None = Field(None, max_length=100)
    decode_tok_s: float | None = None
    decode_ci_low: float | None = None
    decode_ci_high: float | None = None
    quality: str | None = Field(None, max_length=20)
    ledger_commit: str | None = Field(None, max_length=40)


class IdentityEntry(SQLModel, table=True):
    """One row per resolved identity field: what `--where FIELD=VALUE` matches."""

    __tablename__ = "identity"
    __table_args__ = (SqlIndex("ix_identity_name", "name"),)

    record_id: str = Field(primary_key=True, max_length=64)
    name: str = Field(primary_key=True, max_length=100)
    value: str | None = Field(None, sa_type=Text,
                              description="a string as is, any other value as compact JSON")
    status: str = Field(max_length=20)


class ResultEntry(SQLModel, table=True):
    """One row per metric of each suite."""

    __tablename__ = "results"

    record_id: str = Field(primary_key=True, max_length=64)
    suite: str = Field(primary_key=True, max_length=200)
    metric: str = Field(primary_key=True, max_length=100)
    value: float
    unit: str | None = Field(None, max_length=20)
    formula: str | None = Field(None, sa_type=Text)
    count: int | None = None


metadata = SQLModel.metadata
records: Table = RecordEntry.__table__  # type: ignore[attr-defined]
identity: Table = IdentityEntry.__table__  # type: ignore[attr-defined]
results: Table = ResultEntry.__table__  # type: ignore[attr-defined]
VISIBLE = records.c.ledger_commit.is_not(None)  # a row shows once its ledger commit exists
TABLES = (records, identity, results)
__all__ = ["COLUMNS", "TABLES", "Index", "RecordRow", "Rows", "entry_differences", "entry_rows",
           "open_index", "value_text"]


class Index:
    def __init__(self, url: str) -> None:
        sqlite = url.startswith("sqlite")
        self.url = url
        self.engine = create_engine(url, **({"connect_args": {"timeout": 60}} if sqlite else {}))
        if sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)

    def create(self) -> None:
        with self._guard():
            metadata.create_all(self.engine)

    def add(self, rows: Rows) -> None:
        """All rows of one record in one transaction, not yet visible."""
        with self._guard(), self.engine.begin() as db:
            for table in (records, identity, results):
                if rows[table.name]:
                    db.execute(table.insert(), rows[table.name])

    def put(self, entries: list[Rows]) -> None:
        """Committed records' rows, replacing any they had, in one transaction: homes
        that share one database pull the same records, each writing them, at times at
        the same moment. So on PostgreSQL the transaction first takes each record's
        lock (in id order: two writers never wait on each other in a cycle), and every
        insert skips a row another writer (or a seal) has just committed."""
        entries = sorted(entries, key=lambda entry: entry["records"][0]["id"])
        ids = [entry["records"][0]["id"] for entry in entries]
        with self._guard(), self.engine.begin() as db:
            if ids and db.dialect.name == "postgresql":
                db.execute(text("SELECT pg_advisory_xact_lock(:c, :k)"),
                           [{"c": PUT_LOCKS, "k": _put_key(rid)} for rid in ids])
            for table in (identity, results, records):
                key = table.c.id if table is records else table.c.record_id
                for chunk in range(0, len(ids), 500):
                    db.execute(delete(table).where(key.in_(ids[chunk:chunk + 500])))
            for table in (records, identity, results):
                rows = [row for entry in entries for row in entry[table.name]]
                if rows:
                    db.execute(_insert_new(db.dialect.name, table), rows)

    def mark_committed(self, record_id: str, commit: str) -> None:
        with self._guard(), self.engine.begin() as db:
            db.execute(update(records).where(records.c.id == record_id)
                       .values(ledger_commit=commit))

    def drop(self, record_id: str) -> None:
        with self._guard(), self.engine.begin() as db:
            for table in (identity, results):
                db.execute(delete(table).where(table.c.record_id == record_id))
            db.execute(delete(records).where(records.c.id == record_id))

    @contextmanager
    def sealing(self, record_id: str) -> Iterator[None]:
        """Held by a seal from its rows' insert until its ledger commit is marked. On
        PostgreSQL, which several homes of a team may share, it is a session advisory
        lock: another home's `settle` sees the seal in progress and leaves its rows, and
        the lock goes with the connection if the sealer dies. SQLite is one home's own:
        its home lock is enough."""
        if self.engine.dialect.name != "postgresql":
            yield
            return
        with self._guard(), self.engine.connect() as db:
            db.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _lock_key(record_id)})
            db.commit()
            try:
                yield
            finally:
                db.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _lock_key(record_id)})
                db.commit()

    def being_sealed(self, record_id: str) -> bool:
        """Whether a live seal (of any home) holds `record_id`'s rows (PostgreSQL)."""
        if self.engine.dialect.name != "postgresql":
            return False
        with self._guard(), self.engine.connect() as db:
            key = {"k": _lock_key(record_id)}
            free = db.execute(text("SELECT pg_try_advisory_lock(:k)"), key).scalar()
            if free:
                db.execute(text("SELECT pg_advisory_unlock(:k)"), key)
            db.commit()
            return not free

    def pending(self) -> list[str]:
        with self._guard(), self.engine.connect() as db:
            return list(db.scalars(select(records.c.id).where(records.c.ledger_commit.is_(None))))

    def commits(self) -> dict[str, str]:
        """record id -> ledger commit, for every visible record."""
        query = select(records.c.id, records.c.ledger_commit).where(VISIBLE)
        with self._guard(), self.engine.connect() as db:
            return {r.id: r.ledger_commit for r in db.execute(query)}

    def commit_of(self, record_id: str) -> str | None:
        """The ledger commit the index holds for a record (a hint: readers confirm it)."""
        query = select(records.c.ledger_commit).where(records.c.id == record_id)
        with self._guard(), self.engine.connect() as db:
            return db.scalar(query)

    def matching(self, prefix: str) -> list[str]:
        query = (select(records.c.id).where(records.c.id.startswith(prefix, autoescape=True))
                 .where(VISIBLE).limit(20))
        with self._guard(), self.engine.connect() as db:
            return list(db.scalars(query))

    def rows(self, where: Sequence[tuple[str, str]] = (),
             limit: int | None = None) -> list[RecordRow]:
        query = select(records).where(VISIBLE)
        for name, value in where:
            query = query.where(_condition(name, value))
        query = query.order_by(records.c.created_at.desc(), records.c.id).limit(limit or None)
        with self._guard(), self.engine.connect() as db:
            return [RecordRow(**r._mapping) for r in db.execute(query)]

    def entries(self, ids: Sequence[str] | None = None) -> dict[str, Rows]:
        """record id -> its rows in every table (all visible records when `ids` is None),
        to compare with what the record's signed statement gives."""
        out: dict[str, Rows] = {}
        with self._guard(), self.engine.connect() as db:
            for table in (records, identity, results):
                key = table.c.id if table is records else table.c.record_id
                query = select(table) if ids is None else select(table).where(key.in_(ids))
                for row in db.execute(query):
                    values = dict(row._mapping)
                    rid = values["id" if table is records else "record_id"]
                    entry = out.setdefault(rid, {"records": [], "identity": [], "results": []})
                    entry[table.name].append(values)
        return out

    def rebuild(self, entries: list[Rows]) -> None:
        """Replace the tables and every row in one transaction: the index is a cache, so
        tables made by an older registry (other columns) are dropped, not migrated, and
        a SQLite file that is no database at all is set aside and made anew."""
        self._set_aside_if_corrupt()
        tables = [identity, results, records]
        with self._guard(), self.engine.begin() as db:
            metadata.drop_all(db, tables=tables)
            metadata.create_all(db, tables=tables)
            for table in (records, identity, results):
                rows = [row for entry in entries for row in entry[table.name]]
                if rows:
                    db.execute(table.insert(), rows)

    def _guard(self) -> AbstractContextManager[None]:
        return _guard(self.url)

    def _set_aside_if_corrupt(self) -> None:
        """A corrupt SQLite index (a crash of the disk, not of a seal: the WAL protects
        those) is renamed `index.sqlite.corrupt-<time>`, kept for whoever looks into it."""
        import time
        from pathlib import Path

        if not self.url.startswith("sqlite:///"):
            return
        try:
            with self.engine.connect() as db:
                db.exec_driver_sql("PRAGMA schema_version")
            return
        except DatabaseError:
            pass
        self.engine.dispose()
        path = Path(self.url.removeprefix("sqlite:///"))
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        path.rename(path.with_name(f"{path.name}.corrupt-{int(time.time())}"))


def _lock_key(record_id: str) -> int:
    """A record's advisory-lock key: its first 15 hex digits (60 bits, a positive bigint),
    offset from the keys other tables of this database use."""
    return int(record_id[:15], 16) if len(record_id) >= 15 else 0


PUT_LOCKS = 727028
"""The first key of `put`'s two-key advisory locks: a key space apart from the seal's
one-key locks (PostgreSQL keeps the two forms apart), so a home sealing a record and
pulling it never waits on itself."""


def _put_key(record_id: str) -> int:
    """A record's `put` lock: its first 8 hex digits as a signed 32-bit integer."""
    value = int(record_id[:8], 16) if len(record_id) >= 8 else 0
    return value - (1 << 32) if value >= 1 << 31 else value


def _insert_new(dialect: str, table: Table) -> Any:
    """An insert that skips rows whose key is there already (INSERT ... ON CONFLICT DO
    NOTHING, on both databases)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing()
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table).on_conflict_do_nothing()


def _condition(name: str, value: str) -> Any:
    kind = where_kind(name, value)
    if kind == "imported":
        return records.c.imported.is_(yes(value))
    if kind == "column":
        return records.c[name] == value
    matching = select(identity.c.record_id).where(identity.c.name == name,
                                                  identity.c.value == value)
    return records.c.id.in_(matching)


@contextmanager
def _guard(url: str) -> Iterator[None]:
    """A missing table or an unreachable database becomes one clear error."""
    try:
        yield
    except (OperationalError, ProgrammingError, DatabaseError) as e:
        raise unreadable(url, str(e.orig)) from None


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a seal
    cursor.close()


def open_index(home: Home) -> Index:
    return Index(home.database_url)
