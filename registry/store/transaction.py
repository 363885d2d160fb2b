"""One write to a home's ledger: the home lock held, a crashed writer's debris cleared
(and a pull killed half way finished: registry/store/journal.py), and the head
remembered as verified when this home's own commits moved it.

Every writer (seal, teacher binding, keyring change, pull, push, settling a crashed
seal, reindex) runs inside `transaction(home)` rather than writing those three steps
out by hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from registry.store import journal
from registry.store.home import Home
from registry.store.ledger import Ledger
from registry.store.lock import exclusive
from registry.store.trust import appended


@contextmanager
def transaction(home: Home) -> Iterator[Ledger]:
    """The ledger, locked and recovered; on the way out, a head this home's own writes
    moved (from the head it last verified) is remembered, even when the block raised
    after its commit."""
    with exclusive(home.lock_file):
        ledger = Ledger(home.ledger)
        ledger.recover()
        journal.complete(home, ledger)  # a pull killed half way is finished first
        before = ledger.head()
        try:
            yield ledger
        finally:
            after = ledger.head()
            if after is not None and after != before:
                appended(home, before, after)
