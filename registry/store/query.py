"""Reading records back: `list` from the index, `show` from the index and the ledger.

Both stay light (no git, no torch, no vllm): the index answers queries and id
prefixes; the statement is read straight from the ledger folder.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from registry.errors import InvalidInput, NotFound
from registry.record import Statement, match_id, parse_statement, record_id
from registry.store.home import Home
from registry.store.index import Index, RecordRow, open_index
from registry.store.ledger import RECORDS, STATEMENT


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
    index = open_index(home)
    if index.pending():
        from registry.store.writer import settle_pending

        settle_pending(home, index)
    return index


def find_records(home: Home, where: Sequence[str] = (),
                 limit: int | None = None) -> list[RecordRow]:
    return readable_index(home).rows(parse_where(where), limit)


def resolve_id(home: Home, prefix: str) -> str:
    """The full id of the one indexed record starting with `prefix`."""
    if not prefix or any(c not in "0123456789abcdef" for c in prefix.lower()):
        raise NotFound(f"no record {prefix!r}: a record id is hexadecimal",
                       hint="registry list shows the records")
    return match_id(prefix, readable_index(home).matching(prefix.lower()))


def show_record(home: Home, prefix: str) -> ShownRecord:
    rid = resolve_id(home, prefix)
    path = home.ledger / RECORDS / rid / STATEMENT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFound(f"record {rid[:16]} is indexed but {path} is missing",
                       hint="registry verify " + rid[:16]) from None
    row = next(iter(open_index(home).rows([("id", rid)], 1)), None)
    return ShownRecord(id=rid, ledger_commit=row.ledger_commit if row else None,
                       signer=row.signer if row else None,
                       statement_matches_id=record_id(data) == rid,
                       statement=parse_statement(data))
