"""Reading records back: `list` from the index, one record from the ledger.

Both stay light (no SQLAlchemy for a SQLite index, no torch, no vllm): the index
answers queries; an id prefix is matched against the ledger's committed tree and the
statement is read straight from the ledger folder. The index is a cache, never a
source: every record a reader returns was checked against its signed statement and
the verified keyring (registry/signing/signed.py), and carries the result.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol

from registry.errors import InvalidInput, NotFound
from registry.formats.display import record_quality, short_id
from registry.formats.record import Statement, match_id, parse_statement, summary_line
from registry.signing.signed import SignatureCheck, Trust, check_signed
from registry.store.home import Home
from registry.store.ledger import ENVELOPE, STATEMENT, committed_ids, folder_at

if TYPE_CHECKING:
    from registry.signing.keyring import Keyring
    from registry.store.rows import RecordRow, Rows


class IndexReader(Protocol):
    """What readers ask of an index: `Index` (SQLAlchemy) or `SqliteReader` (sqlite3)."""

    def pending(self) -> list[str]: ...

    def commit_of(self, record_id: str) -> str | None: ...

    def rows(self, where: Sequence[tuple[str, str]] = (),
             limit: int | None = None) -> list[RecordRow]: ...

    def entries(self, ids: Sequence[str] | None = None) -> dict[str, Rows]: ...


def parse_where(terms: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for term in terms:
        name, sep, value = term.partition("=")
        if not sep or not name.strip():
            raise InvalidInput(f"--where {term!r}: expected FIELD=VALUE",
                               hint="e.g. --where precision.kv_cache=fp8_e4m3")
        out.append((name.strip(), value.strip()))
    return out


def readable_index(home: Home) -> IndexReader:
    """The index, with any row a crashed seal left settled first: a SQLite index is read
    through sqlite3 (no SQLAlchemy to import), any other through `Index`."""
    from registry.store.sqlite_read import SqliteReader, sqlite_path

    path = sqlite_path(home.database_url)
    reader: IndexReader
    if path is None:
        from registry.store.index import open_index

        reader = open_index(home)
    else:
        reader = SqliteReader(home.database_url, path)
    if reader.pending():
        from registry.store.index import open_index
        from registry.store.writer import settle_pending

        settle_pending(home, open_index(home))
    return reader


def find_records(home: Home, where: Sequence[str] = (),
                 limit: int | None = None) -> list[RecordRow]:
    """Records from the index, newest first, each checked against its signed statement:
    a row shows the signed values, with its trust, never what the index alone says."""
    from registry.store.trust import current_keyring

    index = readable_index(home)
    rows = index.rows(parse_where(where), limit)
    keyring = current_keyring(home).current
    entries = index.entries([r.id for r in rows]) if rows else {}
    return [_checked(home, row, entries.get(row.id), keyring) for row in rows]


def index_rows(home: Home, where: Sequence[str] = (),
               limit: int | None = None) -> list[RecordRow]:
    """What the index says, newest first, unchecked: to choose records that a reader
    then reads from the ledger (as `registry report` does), never to show."""
    return readable_index(home).rows(parse_where(where), limit)


def _checked(home: Home, row: RecordRow, indexed: Rows | None, keyring: Keyring) -> RecordRow:
    from registry.store.rows import entry_differences, entry_rows, signed_extras, signed_row

    statement, envelope = _ledger_files(home, row.id)
    check = check_signed(statement, envelope, expected_id=row.id, keyring=keyring)
    if not check.ok or statement is None:
        return row.model_copy(update={"trust": check.trust, "trust_detail": check.detail,
                                      "signer": None})
    parsed = parse_statement(statement)
    differs = entry_differences(indexed, entry_rows(row.id, parsed, check.signer))
    if not differs:  # the summary and quality as this registry writes them (display policy)
        return row.model_copy(update={
            "trust": Trust.verified, **signed_extras(parsed),
            "summary": summary_line(parsed.predicate),
            "quality": record_quality(row.quality, parsed.predicate.imported is not None)})
    shown = signed_row(row.id, parsed, check.signer, row.ledger_commit)
    return shown.model_copy(update={
        "quality": record_quality(shown.quality, parsed.predicate.imported is not None),
        "trust_detail": f"the index differed in {', '.join(differs)}: shown as signed "
                        "(registry reindex)"})


def _ledger_files(home: Home, rid: str) -> tuple[bytes | None, bytes | None]:
    folder = folder_at(home.ledger, rid)
    out: list[bytes | None] = []
    for name in (STATEMENT, ENVELOPE):
        try:
            out.append((folder / name).read_bytes())
        except OSError:
            out.append(None)
    return out[0], out[1]


def resolve_id(home: Home, prefix: str) -> str:
    """The full id of the one committed record starting with `prefix` (the ledger decides,
    as git resolves short hashes; the index is not needed to find one record)."""
    if "/" in prefix or prefix.startswith(("." , "~")):  # meant as a path, and none is there
        raise InvalidInput(f"{prefix}: no such run directory (and not a record id)",
                           hint="check the path; registry list shows the records")
    if not prefix or any(c not in "0123456789abcdef" for c in prefix.lower()):
        raise NotFound(f"no record {prefix!r}: a record id is hexadecimal",
                       hint="registry list shows the records")
    return match_id(prefix, committed_ids(home.ledger, prefix.lower()))


def checked_statement(home: Home, prefix: str, committed: Sequence[str] | None = None,
                      ) -> tuple[str, SignatureCheck, bytes]:
    """(full id, signature check, statement bytes) of one committed record; `committed`,
    the ledger's ids listed once, saves a `git ls-tree` per record when reading many."""
    from registry.store.trust import current_keyring

    rid = resolve_id(home, prefix) if committed is None else match_id(prefix, list(committed))
    statement, envelope = _ledger_files(home, rid)
    if statement is None:
        raise NotFound(f"record {short_id(rid)} is committed but its statement file is missing",
                       hint="registry verify " + short_id(rid))
    check = check_signed(statement, envelope, expected_id=rid,
                         keyring=current_keyring(home).current)
    return rid, check, statement


def sealed_statement(home: Home, prefix: str, committed: Sequence[str] | None = None,
                     ) -> tuple[str, Statement]:
    """(full id, statement) of a record a trusted key signed, as signed: what judges and
    compares records reads (`registry verify` checks the rest)."""
    rid, check, data = checked_statement(home, prefix, committed)
    if not check.ok:
        raise check.error(f"record {short_id(rid)}")
    return rid, parse_statement(data)


def statements_holding(home: Home, where: Sequence[str], needle: bytes
                       ) -> Iterator[tuple[RecordRow, Statement]]:
    """The committed records of `where` whose statement bytes hold `needle`, each read
    where the ledger keeps it and used only if it still hashes to its id (a cheap
    byte search first: most records are never parsed)."""
    from registry.formats.record import record_id

    for row in find_records(home, where):
        try:
            data = (folder_at(home.ledger, row.id) / STATEMENT).read_bytes()
        except OSError:
            continue
        if needle in data and record_id(data) == row.id:
            yield row, parse_statement(data)
