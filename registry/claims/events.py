"""Claim events in the ledger: appended as signed documents
(`claims/<claim>/<sha256>.json`), read back only after the history and each signature
verify, and replayed through the state machine so that no stored event is believed
for what it says about itself.

Events are chained: each names the sha256 of the one before it and its sequence
number. They are replayed in the ledger's signed order (registry/claims/order.py), never
by the time an event states. Two members who advance a claim at once both add an event
after the same one; the replay keeps the one committed first, the same on every home
(a pull replays local commits after the remote's), and reports the other as a conflict,
never applied. A final state (refuted) stays final: a later event is a conflict.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import Field, ValidationError

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.claims.lifecycle import MOVES, Decision, Evidence, decide
from registry.claims.models import (
    EVENT_PAYLOAD_TYPE,
    ClaimBody,
    ClaimEvent,
    EventKind,
    State,
)
from registry.errors import InvalidInput, NotFound, Refused, VerificationFailed
from registry.formats.display import short_id
from registry.signing.keys import Signer
from registry.store.attestations import (
    CLAIMS,
    SignedDocument,
    add_document,
    claim_folder,
    read_documents,
)
from registry.store.home import Home


class Applied(Frozen):
    id: str
    event: ClaimEvent
    signer: str
    decision: Decision | None = Field(None, description="re-derived for advanced events")


class NotApplied(Frozen):
    """An event kept in the ledger but not applied, and why."""

    id: str
    by: str | None = Field(None, description="its signer, when trusted")
    reason: str


class Replayed(Frozen):
    claim: ClaimBody
    state: State
    events: list[Applied]
    conflicts: list[NotApplied] = Field(default_factory=list,
                                        description="trusted events not applied")
    untrusted: list[NotApplied] = Field(default_factory=list,
                                        description="events no trusted key stands behind")
    trusted: bool = Field(True, description="False when the claim's first event is not")
    reason: str | None = Field(None, description="why the claim is not trusted")


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
    """The claim's events in the ledger's signed order (the order their commits were
    made: never the time or sequence number an event states about itself), each move
    re-decided from the verification it names. A second move from one event, or any move
    after a final state, is a conflict (kept, shown, never applied); an event a
    compromised or unknown key signed or committed is shown untrusted, never applied."""
    from registry.claims.order import claim_ledger

    facts = claim_ledger(home)
    docs = read_documents(home, claim_folder(claim_id), EVENT_PAYLOAD_TYPE)
    if not docs:
        raise NotFound(f"no claim {claim_id}", hint="registry claim list")
    docs.sort(key=lambda d: (facts.order.get(d.path, len(facts.order)), d.id))
    trusted: list[tuple[str, str, ClaimEvent]] = []
    untrusted: list[NotApplied] = []
    for doc in docs:
        why = facts.tainted.get(doc.path) or _distrust(doc)
        if why is not None:
            untrusted.append(NotApplied(id=doc.id, reason=f"untrusted, not applied: {why}"))
            if doc is docs[0]:
                return _untrusted_claim(claim_id, doc, why, docs[1:])
            continue
        assert doc.payload is not None and doc.check.signer is not None
        trusted.append((doc.id, doc.check.signer, _parse(doc.payload, doc.path, claim_id)))
    if not trusted:
        raise VerificationFailed(f"claim {claim_id}: no event of it is trusted")
    done = _chain(home, claim_id, trusted)
    return done.model_copy(update={"untrusted": untrusted})


def _distrust(doc: SignedDocument) -> str | None:
    """Why a document's own signature is not trusted (None: it is)."""
    if doc.check.ok and doc.payload is not None and doc.check.signer is not None:
        return None
    return f"{doc.check.trust.value}: {doc.check.detail or 'no trusted signature'}"


def _untrusted_claim(claim_id: str, first: SignedDocument, why: str,
                     rest: list[SignedDocument]) -> Replayed:
    """A claim whose first event is not trusted: shown as its signer wrote it, marked,
    with nothing after it applied (a compromised key's claim is read like its records)."""
    if first.payload is None:
        raise VerificationFailed(f"claim {claim_id}: its first event is {why}",
                                 hint="registry verify --all names every problem")
    event = _parse(first.payload, first.path, claim_id)
    if event.body is None:
        raise VerificationFailed(f"claim {claim_id}: its first event does not create it")
    reason = f"its first event {short_id(first.id)} is {why}"
    return Replayed(claim=event.body, state=event.state, trusted=False, reason=reason,
                    events=[Applied(id=first.id, event=event, signer=event.actor)],
                    untrusted=[NotApplied(id=d.id, reason=f"not applied: the claim is "
                                                          f"untrusted ({reason})")
                               for d in rest])


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
        raise VerificationFailed(f"claim {claim_id}: event {short_id(first_id)} names actor "
                                 f"{short_id(first.actor)} but {short_id(first_signer)} signed it")
    body, state = first.body, first.state
    if first.kind is EventKind.created and state is not State.submitted:
        raise VerificationFailed(f"claim {claim_id}: a new claim starts submitted")
    applied = [Applied(id=first_id, event=first, signer=first_signer)]
    conflicts: list[NotApplied] = []
    for eid, signer, event in events[1:]:
        why = _not_next(applied, state, event)
        if why is not None:
            conflicts.append(NotApplied(id=eid, by=signer, reason=why))
            continue
        if event.kind is not EventKind.advanced or event.body is not None \
                or event.actor != signer:
            raise VerificationFailed(f"claim {claim_id}: event {short_id(eid)} is not an advance "
                                     "signed by its actor")
        decision = decide(state, event.state, body, evidence_of(home, event), event.moved)
        state = decision.state
        applied.append(Applied(id=eid, event=event, signer=signer, decision=decision))
    return Replayed(claim=body, state=state, events=applied, conflicts=conflicts)


def _not_next(applied: list[Applied], state: State, event: ClaimEvent) -> str | None:
    """Why a trusted event, taken in the ledger's order, is not the claim's next move
    (None: it is). The first move from an event wins; the ledger's order decides which
    is first, the same on every home."""
    tip = applied[-1]
    wants = f"{event.state.value} (seq {event.seq}, dated {event.time})"
    if not MOVES[state]:
        return f"{wants}: not applied, the claim is {state.value}, which is final"
    if event.previous == tip.id and event.seq == tip.event.seq + 1:
        return None
    taken = next((i for i, a in enumerate(applied) if a.id == event.previous), None)
    if taken is not None and taken + 1 < len(applied):
        return (f"{wants}: not applied, a second move from event {short_id(applied[taken].id)} "
                f"(event {short_id(applied[taken + 1].id)}, committed first, moved it to "
                f"{applied[taken + 1].event.state.value})")
    if event.previous == tip.id:
        return f"{wants}: not applied, its seq does not follow {tip.event.seq}"
    return f"{wants}: not applied, it follows no applied event of this claim"


def evidence_of(home: Home, event: ClaimEvent) -> Evidence | None:
    """The verification and record an event names, read again and trusted again."""
    if event.verification is None:
        return None
    from registry.store.query import sealed_statement
    from registry.store.verifications import all_verifications

    good, _ = all_verifications(home)
    found = next((v for v in good if v.id == event.verification), None)
    if found is None:
        raise Refused(f"claim {event.claim}: verification {short_id(event.verification)} is not a "
                      "trusted attestation in this ledger", hint="registry verify --all")
    judged = found.statement.judged()
    rid = event.record or _measured(found.statement.predicate.records, judged)
    if rid not in judged:
        raise Refused(f"claim {event.claim}: record {short_id(rid)} is not one that verification "
                      f"{short_id(event.verification)} judged")
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
