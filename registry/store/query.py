"""Reading records back: `list` from the index, one record from the ledger.

Both stay light (no gitpython, no torch, no vllm): the index answers queries; an id
prefix is matched against the ledger's committed tree and the statement is read
straight from the ledger folder. The index is a cache, never a source: every record
a reader returns was checked against its signed statement and the verified keyring
(registry/signing/signed.py), and carries the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput, NotFound
from registry.formats.record import Statement, match_id, parse_statement
from registry.signing.signed import SignatureCheck, Trust, check_signed
from registry.store.home import Home
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT, adding_commit, committed_ids
from registry.store.verifications import StoredVerification

if TYPE_CHECKING:
    from registry.signing.keyring import Keyring
    from registry.store.index import Index, RecordRow, Rows


class ShownRecord(Frozen):
    id: str
    ledger_commit: str | None
    check: SignatureCheck  # the signer is named only when it is trusted
    statement: Statement
    verifications: list[StoredVerification] = Field(
        default_factory=list, description="trusted attestations that judged this record")


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
    """Records from the index, newest first, each checked against its signed statement:
    a row shows the signed values, with its trust, never what the index alone says."""
    from registry.store.trust import current_keyring

    index = readable_index(home)
    rows = index.rows(parse_where(where), limit)
    keyring = current_keyring(home).current
    entries = index.entries([r.id for r in rows]) if rows else {}
    return [_checked(home, row, entries.get(row.id), keyring) for row in rows]


def _checked(home: Home, row: RecordRow, indexed: Rows | None, keyring: Keyring) -> RecordRow:
    from registry.store.index import RecordRow, entry_differences, entry_rows

    statement, envelope = _ledger_files(home, row.id)
    check = check_signed(statement, envelope, expected_id=row.id, keyring=keyring)
    if not check.ok or statement is None:
        return row.model_copy(update={"trust": check.trust, "trust_detail": check.detail,
                                      "signer": None})
    signed = entry_rows(row.id, parse_statement(statement), check.signer)
    differs = entry_differences(indexed, signed)
    if not differs:
        return row.model_copy(update={"trust": Trust.verified})
    values = {**signed["records"][0], "ledger_commit": row.ledger_commit}
    return RecordRow(**values, trust=Trust.verified,
                     trust_detail=f"the index differed in {', '.join(differs)}: shown as "
                                  "signed (registry reindex)")


def _ledger_files(home: Home, rid: str) -> tuple[bytes | None, bytes | None]:
    folder = home.ledger / RECORDS / rid
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
        raise NotFound(f"record {rid[:16]} is committed but its statement file is missing",
                       hint="registry verify " + rid[:16])
    check = check_signed(statement, envelope, expected_id=rid,
                         keyring=current_keyring(home).current)
    return rid, check, statement


def sealed_statement(home: Home, prefix: str, committed: Sequence[str] | None = None,
                     ) -> tuple[str, Statement]:
    """(full id, statement) of a record a trusted key signed, as signed: what judges and
    compares records reads (`registry verify` checks the rest)."""
    rid, check, data = checked_statement(home, prefix, committed)
    if not check.ok:
        raise check.error(f"record {rid[:16]}")
    return rid, parse_statement(data)


def show_record(home: Home, prefix: str) -> ShownRecord:
    """One record, read from the ledger alone, with whether a trusted key signed it."""
    from registry.store.verifications import verifications_of

    rid, check, data = checked_statement(home, prefix)
    return ShownRecord(id=rid, ledger_commit=adding_commit(home.ledger, rid), check=check,
                       statement=parse_statement(data), verifications=verifications_of(home, rid))
