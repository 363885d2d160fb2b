"""Claim events in the ledger: appended as signed documents
(`claims/<claim>/<sha256>.json`), read back only after the history and each signature
verify, and replayed through the state machine so that no stored event is believed
for what it says about itself.

Events are chained: each names the sha256 of the one before it and its sequence
number. Two members who advance a claim at once both add an event after the same
one; the replay keeps the first by (seq, time, id), the same on every home, and
reports the other as a conflict, never applied.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field, ValidationError

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.claims.lifecycle import Decision, Evidence, decide
from registry.claims.models import (
    EVENT_PAYLOAD_TYPE,
    ClaimBody,
    ClaimEvent,
    EventKind,
    State,
)
from registry.errors import InvalidInput, NotFound, Refused, VerificationFailed
from registry.signing.keys import Signer
from registry.store.attestations import CLAIMS, add_document, claim_folder, read_documents
from registry.store.home import Home


class Applied(Frozen):
    id: str
    event: ClaimEvent
    signer: str
    decision: Decision | None = Field(None, description="re-derived for advanced events")


class Replayed(Frozen):
    claim: ClaimBody
    state: State
    events: list[Applied]
    conflicts: list[str] = Field(default_factory=list, description="events not applied")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def claim_ids(home: Home) -> list[str]:
    from registry.store.ledger import Ledger

    return sorted({p.split("/")[1] for p in Ledger(home.ledger).tree_files(CLAIMS)
                   if p.count("/") == 2})


def append(home: Home, event: ClaimEvent, signer: Signer) -> str:
    """Sign and commit `event`; its id."""
    message = f"claim {event.claim}: {event.kind.value} -> {event.state.value}"
    doc = add_document(home, claim_folder(event.claim), canonical_bytes(event),
                       EVENT_PAYLOAD_TYPE, message, signer)
    return doc.id


def replay(home: Home, claim_id: str) -> Replayed:
    """The claim's verified events, in chain order, each move re-decided from the
    verification it names; refused when the history, an event or a move does not hold."""
    _history_holds(home)
    docs = read_documents(home, claim_folder(claim_id), EVENT_PAYLOAD_TYPE)
    if not docs:
        raise NotFound(f"no claim {claim_id}", hint="registry claim list")
    events: list[tuple[str, str, ClaimEvent]] = []
    for doc in docs:
        if not doc.check.ok or doc.payload is None or doc.check.signer is None:
            raise doc.check.error(f"claim {claim_id}: event {doc.path}")
        events.append((doc.id, doc.check.signer, _parse(doc.payload, doc.path, claim_id)))
    events.sort(key=lambda e: (e[2].seq, e[2].time, e[0]))
    return _chain(home, claim_id, events)


def _parse(payload: bytes, path: str, claim_id: str) -> ClaimEvent:
    try:
        event = ClaimEvent.model_validate(loads_json(payload))
    except (ValueError, ValidationError) as e:
        raise VerificationFailed(f"{path}: not a claim event ({str(e).splitlines()[0]})") from None
    if event.claim != claim_id:
        raise VerificationFailed(f"{path}: an event of claim {event.claim!r} filed under "
                                 f"{claim_id!r}")
    return event


def _chain(home: Home, claim_id: str, events: list[tuple[str, str, ClaimEvent]]) -> Replayed:
    first_id, first_signer, first = events[0]
    if first.seq != 0 or first.previous is not None or first.body is None or \
            first.kind is EventKind.advanced:
        raise VerificationFailed(f"claim {claim_id}: its first event does not create it")
    if first.actor != first_signer:
        raise VerificationFailed(f"claim {claim_id}: event {first_id[:16]} names actor "
                                 f"{first.actor[:16]} but {first_signer[:16]} signed it")
    body, state = first.body, first.state
    if first.kind is EventKind.created and state is not State.submitted:
        raise VerificationFailed(f"claim {claim_id}: a new claim starts submitted")
    applied = [Applied(id=first_id, event=first, signer=first_signer)]
    conflicts = []
    for eid, signer, event in events[1:]:
        last = applied[-1]
        if event.previous != last.id or event.seq != last.event.seq + 1:
            conflicts.append(eid)
            continue
        if event.kind is not EventKind.advanced or event.body is not None \
                or event.actor != signer:
            raise VerificationFailed(f"claim {claim_id}: event {eid[:16]} is not an advance "
                                     "signed by its actor")
        decision = decide(state, event.state, body, evidence_of(home, event), event.moved)
        state = decision.state
        applied.append(Applied(id=eid, event=event, signer=signer, decision=decision))
    return Replayed(claim=body, state=state, events=applied, conflicts=conflicts)


def evidence_of(home: Home, event: ClaimEvent) -> Evidence | None:
    """The verification and record an event names, read again and trusted again."""
    if event.verification is None:
        return None
    from registry.store.query import sealed_statement
    from registry.store.verifications import all_verifications

    good, _ = all_verifications(home)
    found = next((v for v in good if v.id == event.verification), None)
    if found is None:
        raise Refused(f"claim {event.claim}: verification {event.verification[:16]} is not a "
                      "trusted attestation in this ledger", hint="registry verify --all")
    judged = found.statement.judged()
    rid = event.record or _measured(found.statement.predicate.records, judged)
    if rid not in judged:
        raise Refused(f"claim {event.claim}: record {rid[:16]} is not one that verification "
                      f"{event.verification[:16]} judged")
    rid, record = sealed_statement(home, rid)
    return Evidence(verification_id=found.id, verification=found.statement, record_id=rid,
                    record=record)


def _measured(records: dict[str, str], judged: list[str]) -> str:
    """The record a verification measured: the reproduction, else the only one."""
    for role in ("reproduction", "reviewed", "candidate"):
        if role in records:
            return records[role]
    if len(judged) == 1:
        return judged[0]
    raise InvalidInput("the verification judged several records: name one with --record")


_HELD: set[tuple[str, str | None, str | None]] = set()  # (ledger, head, last verified)


def _history_holds(home: Home) -> None:
    """Claims are read only from a ledger whose whole history verifies (checked once per
    process for one head: `claim list` reads many claims)."""
    from registry.store.history import check_history
    from registry.store.ledger import Ledger
    from registry.store.trust import current_keyring, load_state

    ledger = Ledger(home.ledger)
    last = load_state(home).head
    key = (str(home.ledger), ledger.head(), last)
    if key in _HELD:
        return
    history = check_history(ledger, current_keyring(home), last)
    if history.problems:
        raise VerificationFailed(f"the ledger's history does not verify: "
                                 f"{history.problems[0].detail}",
                                 hint="registry verify --all names every problem")
    _HELD.add(key)

