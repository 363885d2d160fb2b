"""What the ledger's signed history says about claim events: the order in which they
were committed (the only order a replay believes: an event's own `time` and `seq` are
whatever its signer wrote) and which of them a compromised key committed.

The history must verify as it does for records, with one difference: a commit signed
by a key revoked as compromised does not make every claim unreadable. The events it
added are marked untrusted, with the reason, and every other claim reads as before
(records are treated alike by their views).
"""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import VerificationFailed
from registry.store.attestations import CLAIMS
from registry.store.home import Home


class ClaimLedger(Frozen):
    order: dict[str, int] = Field(description="claim event path -> position of the commit "
                                              "that added it, oldest first")
    tainted: dict[str, str] = Field(description="claim event path -> why it is untrusted: "
                                                "added by a commit of a compromised key")


_HELD: dict[tuple[str, str | None, str | None], ClaimLedger] = {}


def claim_ledger(home: Home) -> ClaimLedger:
    """The verified history's facts about claim events (read once per process for one
    head: `claim list` reads many claims); refused when the history does not verify
    for any reason but a compromised key's commits."""
    from registry.signing.failures import Kind
    from registry.store.history import read_commits, walk
    from registry.store.ledger import Ledger
    from registry.store.trust import current_keyring, load_state

    ledger = Ledger(home.ledger)
    last = load_state(home).head
    key = (str(home.ledger), ledger.head(), last)
    if key in _HELD:
        return _HELD[key]
    commits = read_commits(ledger)
    history = walk(commits, current_keyring(home), last)
    fatal = [p for p in history.problems if p.kind is not Kind.revoked]
    if fatal:
        raise VerificationFailed(f"the ledger's history does not verify: {fatal[0].detail}",
                                 hint="registry verify --all names every problem")
    revoked = {p.commit: p.detail for p in history.problems if p.commit}
    order: dict[str, int] = {}
    tainted: dict[str, str] = {}
    for position, entry in enumerate(commits.order):
        for status, path in commits.changes.get(entry[0], []):
            if status == "A" and path.startswith(f"{CLAIMS}/"):
                order.setdefault(path, position)
                if entry[0] in revoked:
                    tainted[path] = revoked[entry[0]]
    facts = ClaimLedger(order=order, tainted=tainted)
    _HELD[key] = facts
    return facts
