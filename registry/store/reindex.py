"""Rebuild the index from the ledger alone (`registry reindex`).

Nothing unverified becomes a clean index: the keyring must verify from this home's
pin and the history must be signed, linear, append-only and descend from the head the
home last verified, or nothing is rebuilt. Each record is then indexed only if its
signature verifies under a key that could sign records when it was added; the others
are skipped and reported (`registry verify` names what is wrong with them).
"""

from __future__ import annotations

from registry.base.model import Frozen
from registry.errors import VerificationFailed
from registry.signing.keyring import verify_chain
from registry.store.entries import verified_entries
from registry.store.history import check_history
from registry.store.home import Home
from registry.store.index import open_index
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
        entries, skipped = verified_entries(ledger, chain, history, ledger.record_ids())
        index.rebuild(entries)
        advance(home, state, chain, head=history.head)
    index_bindings(home)
    return ReindexReport(indexed=len(entries), skipped=skipped)
