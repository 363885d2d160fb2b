"""What `claim show` and `claim list` give per claim: id, status (and who stated it),
the claimed figure, the verification figure, the whole history (the lab's statements
then this ledger's events, each attributed), the evidence level with its reason."""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.claims.events import NotApplied, Replayed, claim_ids, replay
from registry.claims.levels import Level, claim_level
from registry.claims.match import AxisMatch
from registry.claims.models import ClaimedIdentity, EventKind
from registry.errors import RegistryError
from registry.formats.metricwords import label
from registry.store.home import Home


class ShownFigure(Frozen):
    value: float | None
    metric: str | None = Field(description="verbatim, with what its words name in brackets")
    by: str | None = None
    date: str | None = None
    evidence: str | None = None
    record: str | None = Field(None, description="the sealed record it rests on")
    verification: str | None = Field(None, description="the attestation it rests on")


class HistoryEntry(Frozen):
    date: str | None
    event: str
    by: str = Field(description="`lab (<file>)` for the lab's statements, else a key id")


class ClaimView(Frozen):
    id: str
    model: str | None
    status: str
    status_by: str = Field(description="who stated the status: the lab, or the ledger's "
                                       "state machine")
    claimed: ShownFigure
    verification: ShownFigure = Field(description="empty when nothing verified it")
    history: list[HistoryEntry]
    evidence_level: Level
    lab_level: str | None = Field(None, description="the level the lab's STATUS.md states")
    identity: ClaimedIdentity
    evidence: list[str]
    axes: list[AxisMatch] = Field(default_factory=list, description="of the last move")
    events: list[str] = Field(description="this ledger's event ids, in order")
    conflicts: list[NotApplied] = Field(default_factory=list,
                                        description="signed events not applied, and why")
    untrusted: list[NotApplied] = Field(default_factory=list,
                                        description="events no trusted key stands behind")
    trust: str = Field("verified", description="`untrusted` when the claim's first event "
                                               "is (a compromised key's claim)")
    trust_reason: str | None = None


class UnreadClaim(Frozen):
    """A claim `claim list` could not read; every other claim is listed as usual."""

    id: str
    status: str = "unreadable"
    reason: str


def show_claim(home: Home, claim_id: str) -> ClaimView:
    return view(home, replay(home, claim_id))


def list_claims(home: Home) -> list[ClaimView | UnreadClaim]:
    """Every claim; one whose events do not verify is listed with the reason, never
    hiding the others (the history as a whole verifies first: order.claim_ledger)."""
    from registry.claims.order import claim_ledger

    claim_ledger(home)
    out: list[ClaimView | UnreadClaim] = []
    for cid in claim_ids(home):
        try:
            out.append(show_claim(home, cid))
        except RegistryError as e:
            out.append(UnreadClaim(id=cid, reason=e.message))
    return out


def view(home: Home, r: Replayed) -> ClaimView:
    body, first = r.claim, r.events[0]
    c = body.claimed
    claimed = ShownFigure(value=c.value, metric=label(c.metric), by=c.by, date=c.date,
                          evidence=body.evidence[0] if body.evidence else None)
    history: list[HistoryEntry] = []
    verification = ShownFigure(value=None, metric=None)
    status_by = first.signer
    if body.lab is not None:
        where = f"lab ({body.lab.path})"
        history += [HistoryEntry(date=h.date, event=h.event, by=where) for h in body.lab.history]
        status_by = where
        lv = body.lab.verification
        if lv is not None:
            verification = ShownFigure(value=lv.value, metric=lv.metric and label(lv.metric),
                                       date=lv.date, evidence=lv.evidence,
                                       record=body.records[0] if body.records else None)
    if first.event.kind is EventKind.created:
        history.append(HistoryEntry(date=first.event.time, event="submitted", by=first.signer))
    for applied in r.events[1:]:
        d, e = applied.decision, applied.event
        text = f"{e.state.value}: {d.reason if d else ''}" + (f" ({e.note})" if e.note else "")
        history.append(HistoryEntry(date=e.time, event=text, by=applied.signer))
        status_by = applied.signer
        if d is not None and d.figure is not None:
            verification = ShownFigure(value=d.figure.value, metric=d.figure.metric,
                                       date=e.time, record=d.figure.record or e.record,
                                       verification=e.verification)
    last = next((a.decision for a in reversed(r.events[1:]) if a.decision and a.decision.axes),
                None)
    status = r.state.value if r.trusted else f"untrusted ({r.state.value} as signed)"
    return ClaimView(id=body.id, model=body.model, status=status, status_by=status_by,
                     claimed=claimed, verification=verification, history=history,
                     evidence_level=claim_level(home, r),
                     lab_level=body.lab.raw.get("evidence_level") if body.lab else None,
                     identity=body.identity, evidence=body.evidence,
                     axes=last.axes if last else [], events=[a.id for a in r.events],
                     conflicts=r.conflicts, untrusted=r.untrusted,
                     trust="verified" if r.trusted else "untrusted", trust_reason=r.reason)
