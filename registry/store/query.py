"""Reading records back: `list` from the index, one record from the ledger.

Both stay light (no gitpython, no torch, no vllm): the index answers queries; an id
prefix is matched against the ledger's committed tree and the statement is read
straight from the ledger folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from registry.errors import InvalidInput, NotFound, RegistryError, VerificationFailed
from registry.record import Statement, match_id, parse_statement, record_id
from registry.store.home import Home
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT, adding_commit, committed_ids

if TYPE_CHECKING:
    from registry.store.index import Index, RecordRow


class ShownRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    ledger_commit: str | None
    signer: str | None
    statement_matches_id: bool
    statement: Statement


def parse_where(terms: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for term in terms:
        name, sep, value = term.partition("=")
        if not sep or not name.strip():
            raise InvalidInput(f"--where {term!r}: expected FIELD=VALUE",
                               hint="e.g. --where precision.kv_cache=fp8_e4m3")
        out.append((name.strip(), value.strip()))
    return out


def readable_index(home: Home) -> Index:
    """The index, with any row a crashed seal left settled first."""
    from registry.store.index import open_index

    index = open_index(home)
    if index.pending():
        from registry.store.writer import settle_pending

        settle_pending(home, index)
    return index


def find_records(home: Home, where: Sequence[str] = (),
                 limit: int | None = None) -> list[RecordRow]:
    return readable_index(home).rows(parse_where(where), limit)


def resolve_id(home: Home, prefix: str) -> str:
    """The full id of the one committed record starting with `prefix` (the ledger decides,
    as git resolves short hashes; the index is not needed to find one record)."""
    if not prefix or any(c not in "0123456789abcdef" for c in prefix.lower()):
        raise NotFound(f"no record {prefix!r}: a record id is hexadecimal",
                       hint="registry list shows the records")
    return match_id(prefix, committed_ids(home.ledger, prefix.lower()))


def statement_bytes_of(home: Home, prefix: str, committed: Sequence[str] | None = None,
                       ) -> tuple[str, bytes]:
    """(full id, the statement's signed bytes) of one committed record; `committed`, the
    ledger's ids listed once, saves a `git ls-tree` per record when reading many."""
    rid = resolve_id(home, prefix) if committed is None else match_id(prefix, list(committed))
    path = home.ledger / RECORDS / rid / STATEMENT
    try:
        return rid, path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"record {rid[:16]} is committed but {path} is missing",
                       hint="registry verify " + rid[:16]) from None


def sealed_statement(home: Home, prefix: str, committed: Sequence[str] | None = None,
                     ) -> tuple[str, Statement]:
    """(full id, statement) of a committed record whose statement still hashes to its id:
    what judges and compares records reads (`registry verify` checks the rest)."""
    rid, data = statement_bytes_of(home, prefix, committed)
    if record_id(data) != rid:
        raise VerificationFailed(f"record {rid[:16]}: its statement was changed after sealing "
                                 "(it no longer hashes to the record id)",
                                 hint=f"registry verify {rid[:16]}")
    return rid, parse_statement(data)


def show_record(home: Home, prefix: str) -> ShownRecord:
    """One record, read from the ledger alone."""
    rid, data = statement_bytes_of(home, prefix)
    return ShownRecord(id=rid, ledger_commit=adding_commit(home.ledger, rid),
                       signer=_signer(home.ledger / RECORDS / rid / ENVELOPE),
                       statement_matches_id=record_id(data) == rid,
                       statement=parse_statement(data))


def _signer(envelope: Path) -> str | None:
    from registry.store import dsse

    try:
        return dsse.parse_envelope(envelope.read_bytes()).signatures[0].keyid
    except (OSError, RegistryError, IndexError):
        return None
