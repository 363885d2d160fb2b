"""Rebuild the index from the ledger alone (`registry reindex`).

Nothing unverified becomes a clean index: the keyring must verify from this home's
pin and the history must be signed, linear, append-only and descend from the head the
home last verified, or nothing is rebuilt. Each record is then indexed only if its
signature verifies under a key that could sign records when it was added; the others
are skipped and reported (`registry verify` names what is wrong with them).
"""

from __future__ import annotations

from registry.base.model import Frozen
from registry.errors import RegistryError, VerificationFailed
from registry.formats.record import parse_statement
from registry.signing.keyring import Role, verify_chain
from registry.signing.signed import check_signed
from registry.store.history import check_history
from registry.store.home import Home
from registry.store.index import entry_rows, open_index
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT
from registry.store.teachers import index_bindings
from registry.store.transaction import transaction
from registry.store.trust import advance, keyring_files, load_state


class ReindexReport(Frozen):
    indexed: int
    skipped: dict[str, str]  # record id -> why


def reindex(home: Home) -> ReindexReport:
    index = open_index(home)
    with transaction(home) as ledger:
        state = load_state(home)
        chain = verify_chain(keyring_files(ledger), state.pin)
        history = check_history(ledger, chain, state.head)
        if history.problems:
            details = "; ".join(p.detail for p in history.problems[:5])
            more = len(history.problems) - 5
            raise VerificationFailed(f"the ledger's history does not verify: {details}"
                                     + (f" (and {more} more)" if more > 0 else ""),
                                     hint="registry verify --all shows every problem; "
                                          "the index is not rebuilt from it")
        tree = ledger.tree_files(RECORDS)
        blobs = ledger.blobs(list(tree.values()))
        entries, skipped = [], {}
        for rid in ledger.record_ids():
            statement, envelope = (blobs.get(tree.get(f"{RECORDS}/{rid}/{name}", ""))
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
        index.rebuild(entries)
        advance(home, state, chain, head=history.head)
    index_bindings(home)
    return ReindexReport(indexed=len(entries), skipped=skipped)
