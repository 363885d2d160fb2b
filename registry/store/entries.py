"""Index rows of ledger records, each verified first: a record becomes rows only when
its statement hashes to its id and a key that could sign records when it was added
signed it (reindex, and the completion of an interrupted pull)."""

from __future__ import annotations

from registry.errors import RegistryError
from registry.formats.record import parse_statement
from registry.signing.keyring import Chain, Role
from registry.signing.signed import check_signed
from registry.store.history import History
from registry.store.index import Rows, entry_rows
from registry.store.ledger import ENVELOPE, STATEMENT, Ledger


def verified_entries(ledger: Ledger, chain: Chain, history: History,
                     ids: list[str]) -> tuple[list[Rows], dict[str, str]]:
    """(index rows of the records that verify, record id -> why for the others)."""
    tree = ledger.records()
    files = {rid: tree[rid].blobs if rid in tree else {} for rid in ids}
    blobs = ledger.blobs([sha for rid in ids for name in (STATEMENT, ENVELOPE)
                          if (sha := files[rid].get(name))])
    entries, skipped = [], {}
    for rid in ids:
        statement, envelope = (blobs.get(files[rid].get(name, ""))
                               for name in (STATEMENT, ENVELOPE))
        ring = chain.versions.get(history.keyring_at.get(rid) or 0)
        check = check_signed(statement, envelope, expected_id=rid, keyring=chain.current,
                             keys=ring.with_role(Role.signer) if ring else {})
        if not check.ok or statement is None:
            skipped[rid] = check.detail or check.trust.value
            continue
        try:
            rows = entry_rows(rid, parse_statement(statement), check.signer)
        except RegistryError as e:
            skipped[rid] = e.message
            continue
        rows["records"][0]["ledger_commit"] = history.added[rid]
        entries.append(rows)
    return entries, skipped
