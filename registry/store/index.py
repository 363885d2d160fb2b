"""The SQL index: what `list`, `show` and `--where` query. SQLite by default,
PostgreSQL when `$REGISTRY_DATABASE_URL` says so; SQLAlchemy core (no ORM) keeps
the read path light. The index is a cache of the ledger: `rebuild` recreates it
from the ledger alone.

A seal inserts a record's rows in one transaction with `ledger_commit` NULL, then
sets it once the ledger commit exists. Readers only see rows with a commit, so a
crash between the two steps leaves an invisible row that the next writer (or
`reindex`) settles against the ledger.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    delete,
    event,
    select,
    update,
)
from sqlalchemy import (
    Index as SqlIndex,
)
from sqlalchemy.exc import OperationalError, ProgrammingError

from registry.errors import InvalidInput, NotFound
from registry.record import Statement, summary_line
from registry.store.home import Home
from registry.store.signed import Trust

metadata = MetaData()
records = Table(
    "records", metadata,
    Column("id", String(64), primary_key=True),
    Column("created_at", String(40), nullable=False),
    Column("lane", String(200)),
    Column("recipe", String(200)),
    Column("parent", String(64)),
    Column("imported", Boolean, nullable=False),
    Column("signer", String(64)),
    Column("summary", Text, nullable=False),
    Column("model", String(200)),
    Column("weights", String(100)),
    Column("kv_cache", String(100)),
    Column("decode_tok_s", Float),
    Column("ledger_commit", String(40)),
    SqlIndex("ix_records_created_at", "created_at"),
)
identity = Table(
    "identity", metadata,
    Column("record_id", String(64), primary_key=True),
    Column("name", String(100), primary_key=True),
    Column("value", Text, doc="a string as is, any other value as compact JSON"),
    Column("status", String(20), nullable=False),
    SqlIndex("ix_identity_name", "name"),
)
results = Table(
    "results", metadata,
    Column("record_id", String(64), primary_key=True),
    Column("suite", String(200), primary_key=True),
    Column("metric", String(100), primary_key=True),
    Column("value", Float, nullable=False),
    Column("unit", String(20)),
    Column("formula", Text),
    Column("count", Integer),
)
VISIBLE = records.c.ledger_commit.is_not(None)  # a row shows once its ledger commit exists
COLUMNS = ("id", "lane", "recipe", "parent", "imported", "signer", "model", "weights", "kv_cache")


class RecordRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    created_at: str
    lane: str | None
    recipe: str | None
    parent: str | None
    imported: bool
    signer: str | None
    summary: str
    model: str | None
    weights: str | None
    kv_cache: str | None
    decode_tok_s: float | None
    ledger_commit: str | None
    trust: Trust | None = None  # set by the reader that checked the signed statement
    trust_detail: str | None = None


def value_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


Rows = dict[str, list[dict[str, Any]]]  # table name -> rows


def entry_rows(record_id: str, statement: Statement, signer: str | None) -> Rows:
    """The rows of each table for one record."""
    p = statement.predicate
    v = p.identity.value
    decode = next((s.metrics["decode_tok_s.median"].value for s in p.results
                   if "decode_tok_s.median" in s.metrics), None)
    record = {
        "id": record_id, "created_at": p.run.sealed_at, "lane": (p.recipe or {}).get("lane"),
        "recipe": (p.recipe or {}).get("name"), "parent": p.parent,
        "imported": p.imported is not None, "signer": signer, "summary": summary_line(p),
        "model": value_text(v("model.architecture")), "weights": value_text(v("precision.weights")),
        "kv_cache": value_text(v("precision.kv_cache")), "decode_tok_s": decode,
        "ledger_commit": None,
    }
    fields = [{"record_id": record_id, "name": name, "value": value_text(f.resolved),
               "status": f.status.value} for name, f in sorted(p.identity.fields.items())]
    metrics = [{"record_id": record_id, "suite": s.suite, "metric": m.name, "value": m.value,
                "unit": m.unit, "formula": m.formula, "count": m.count}
               for s in p.results for m in s.metrics.values()]
    return {"records": [record], "identity": fields, "results": metrics}


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
        that share one database pull the same records, each writing them."""
        ids = [entry["records"][0]["id"] for entry in entries]
        with self._guard(), self.engine.begin() as db:
            for table in (identity, results, records):
                key = table.c.id if table is records else table.c.record_id
                for chunk in range(0, len(ids), 500):
                    db.execute(delete(table).where(key.in_(ids[chunk:chunk + 500])))
            for table in (records, identity, results):
                rows = [row for entry in entries for row in entry[table.name]]
                if rows:
                    db.execute(table.insert(), rows)

    def mark_committed(self, record_id: str, commit: str) -> None:
        with self._guard(), self.engine.begin() as db:
            db.execute(update(records).where(records.c.id == record_id)
                       .values(ledger_commit=commit))

    def drop(self, record_id: str) -> None:
        with self._guard(), self.engine.begin() as db:
            for table in (identity, results):
                db.execute(delete(table).where(table.c.record_id == record_id))
            db.execute(delete(records).where(records.c.id == record_id))

    def pending(self) -> list[str]:
        with self._guard(), self.engine.connect() as db:
            return list(db.scalars(select(records.c.id).where(records.c.ledger_commit.is_(None))))

    def commits(self) -> dict[str, str]:
        """record id -> ledger commit, for every visible record."""
        query = select(records.c.id, records.c.ledger_commit).where(VISIBLE)
        with self._guard(), self.engine.connect() as db:
            return {r.id: r.ledger_commit for r in db.execute(query)}

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
        """Replace every row in one transaction."""
        with self._guard():
            metadata.create_all(self.engine)
            with self.engine.begin() as db:
                for table in (identity, results, records):
                    db.execute(delete(table))
                for table in (records, identity, results):
                    rows = [row for entry in entries for row in entry[table.name]]
                    if rows:
                        db.execute(table.insert(), rows)

    def _guard(self) -> AbstractContextManager[None]:
        return _guard(self.url)


def _condition(name: str, value: str) -> Any:
    if name == "imported":
        return records.c.imported.is_(value.lower() in ("1", "true", "yes"))
    if name in COLUMNS:
        return records.c[name] == value
    if "." in name:
        matching = select(identity.c.record_id).where(identity.c.name == name,
                                                      identity.c.value == value)
        return records.c.id.in_(matching)
    raise InvalidInput(f"--where {name}={value}: unknown field",
                       hint="use an identity field (e.g. precision.kv_cache) or one of "
                            + ", ".join(COLUMNS))


@contextmanager
def _guard(url: str) -> Iterator[None]:
    """A missing table or an unreachable database becomes one clear error."""
    try:
        yield
    except (OperationalError, ProgrammingError) as e:
        where = url.split("@")[-1]
        raise NotFound(f"index {where}: {str(e.orig).splitlines()[0]}",
                       hint="check REGISTRY_DATABASE_URL, or rebuild it: registry reindex",
                       ) from None


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a seal
    cursor.close()


def open_index(home: Home) -> Index:
    return Index(home.database_url)


def entry_differences(indexed: Rows | None, signed: Rows) -> list[str]:
    """What an index entry says that the signed statement does not (table.column),
    the ledger commit aside (history decides that)."""
    if indexed is None:
        return ["missing"]
    found = []
    keys = {"records": ("id",), "identity": ("name",), "results": ("suite", "metric")}
    for table, key in keys.items():
        ours = {tuple(r[k] for k in key): r for r in indexed.get(table, [])}
        theirs = {tuple(r[k] for k in key): r for r in signed[table]}
        if ours.keys() != theirs.keys():
            found.append(f"{table} rows")
            continue
        for k, row in theirs.items():
            found += [f"{table}.{c}" for c, v in row.items()
                      if c != "ledger_commit" and ours[k].get(c) != v]
    return sorted(set(found))
