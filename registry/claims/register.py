"""Writing claims: `claim add` (a new claim, submitted), `claim advance` (a move the
state machine allows, with the evidence it needs) and the first event of an imported
claim (the lab's statement, attributed to the lab, not re-signed as new events)."""

from __future__ import annotations

from registry.claims.events import append, claim_ids, now, replay
from registry.claims.lifecycle import decide
from registry.claims.models import ClaimBody, ClaimEvent, EventKind, State
from registry.claims.view import ClaimView, show_claim, view
from registry.errors import InvalidInput, Refused
from registry.store.attestations import claim_folder
from registry.store.home import Home


def add_claim(home: Home, body: ClaimBody) -> ClaimView:
    """Register a new claim (state `submitted`), refused if the id exists."""
    return _first(home, body, EventKind.created, State.submitted)


def import_claim(home: Home, body: ClaimBody) -> tuple[ClaimView, bool]:
    """The lab's claim as its first event, in the state the lab gave it; (view, added):
    importing the same claim file again adds nothing."""
    assert body.lab is not None
    try:
        state = State(body.lab.status)
    except ValueError:
        raise InvalidInput(f"{body.lab.path}: status {body.lab.status!r} is not a lifecycle "
                           f"word ({', '.join(s.value for s in State)})") from None
    if body.id in claim_ids(home):
        existing = replay(home, body.id)
        if existing.claim.lab and existing.claim.lab.sha256 == body.lab.sha256:
            return view(home, existing), False  # the same file, wherever it was read from
        raise Refused(f"claim {body.id} is already in the ledger from other bytes",
                      hint="a claim's events are only appended: advance it instead")
    return _first(home, body, EventKind.imported, state), True


def _first(home: Home, body: ClaimBody, kind: EventKind, state: State) -> ClaimView:
    from registry.store.writer import ready_signer

    claim_folder(body.id)  # the id's spelling, checked before anything is signed
    if body.id in claim_ids(home):
        raise Refused(f"claim {body.id} already exists", hint=f"registry claim show {body.id}")
    signer = ready_signer(home)
    append(home, ClaimEvent(claim=body.id, seq=0, kind=kind, time=now(), actor=signer[0],
                            state=state, body=body), signer)
    return show_claim(home, body.id)


def advance_claim(home: Home, claim_id: str, target: State, *,
                  verification: str | None = None, record: str | None = None,
                  moved: dict[str, str] | None = None, note: str | None = None) -> ClaimView:
    """Move the claim to `target`; the state machine decides from the evidence, and the
    move is signed only when it holds."""
    from registry.claims.events import evidence_of
    from registry.store.query import resolve_id
    from registry.store.writer import ready_signer

    current = replay(home, claim_id)
    if not current.trusted:
        raise Refused(f"claim {claim_id} is untrusted: {current.reason}",
                      hint="a compromised key's claim is never advanced; register a new one")
    last = current.events[-1]
    att = _attestation_id(home, verification) if verification else None
    rid = resolve_id(home, record) if record else None
    signer = ready_signer(home)
    event = ClaimEvent(claim=claim_id, seq=last.event.seq + 1, previous=last.id,
                       kind=EventKind.advanced, time=now(), actor=signer[0], state=target,
                       verification=att, record=rid, moved=moved or {}, note=note)
    evidence = evidence_of(home, event)
    decision = decide(current.state, target, current.claim, evidence, event.moved)
    if evidence is not None:
        event = event.model_copy(update={"record": evidence.record_id,
                                         "figure": decision.figure.value
                                         if decision.figure else None})
    append(home, event, signer)
    return show_claim(home, claim_id)


def _attestation_id(home: Home, prefix: str) -> str:
    from registry.errors import NotFound
    from registry.store.verifications import all_verifications

    found = [v.id for v in all_verifications(home)[0] if v.id.startswith(prefix.lower())]
    if len(found) != 1 or len(prefix) < 4:
        raise NotFound(f"verification {prefix}: " + ("ambiguous" if len(found) > 1 else
                       "no trusted attestation starts with it"),
                       hint="registry show RECORD lists a record's verifications")
    return found[0]
