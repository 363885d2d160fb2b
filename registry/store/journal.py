"""A pull's intent, written before its branch moves, so a pull killed at any point is
finished by the next command instead of leaving a broken home.

`ledger/.git/registry-pull.json` names the head before and after and the remote head
it verified. It is written (atomically) only after everything the pull brings has been
verified and its objects stored; then the branch moves, the working tree and the index
follow, trust.json remembers the heads, and the journal is removed. A writer that finds
it (every `transaction`, and `verify`) completes it: when the branch is still where it
was, nothing was applied and the journal is dropped; when it moved, the files are
written from their blobs, the records added in between are indexed (each verified
again), the heads are remembered, and the journal is removed.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from registry.base.files import write_model
from registry.base.model import Frozen
from registry.store.entries import verified_entries
from registry.store.history import check_history
from registry.store.home import Home
from registry.store.index import open_index
from registry.store.ledger import Ledger
from registry.store.trust import advance, current_keyring, load_state, save_state

FILE = "registry-pull.json"


class Journal(Frozen):
    before: str | None
    after: str
    remote: str
    remote_head: str


def path_of(ledger: Ledger) -> Path:
    return ledger.path / ".git" / FILE


def begin(ledger: Ledger, journal: Journal) -> None:
    write_model(path_of(ledger), journal)


def end(ledger: Ledger) -> None:
    path_of(ledger).unlink(missing_ok=True)


def pending(ledger: Ledger) -> Journal | None:
    try:
        return Journal.model_validate_json(path_of(ledger).read_bytes())
    except (OSError, ValueError, ValidationError):
        return None  # none, or a torn write: the branch had not moved yet


def complete(home: Home, ledger: Ledger) -> None:
    """Finish (or drop) an interrupted pull; call holding the home lock."""
    journal = pending(ledger)
    head = ledger.head()
    if journal is None or head != journal.after:
        end(ledger)  # none, or the branch never moved: the home is as before
        return
    ledger.materialize(journal.before, journal.after)
    state = load_state(home)
    chain = current_keyring(home)
    history = check_history(ledger, chain, state.head)
    added = [rid for rid, commit in history.added.items()
             if journal.before is None or commit not in _reachable(ledger, journal.before)]
    entries, _ = verified_entries(ledger, chain, history, sorted(added))
    index = open_index(home)
    index.create()
    index.put(entries)
    state = advance(home, load_state(home), chain, head=journal.after)
    save_state(home, state.model_copy(update={"remotes": {**state.remotes,
                                                          journal.remote: journal.remote_head}}))
    end(ledger)


def _reachable(ledger: Ledger, commit: str) -> set[str]:
    from registry.store.git import git_text

    return set(git_text(ledger.path, "rev-list", commit).split())
