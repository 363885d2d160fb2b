"""What `claim show` and `claim list` give per claim: id, status (and who stated it),
the claimed figure, the verification figure, the whole history (the lab's statements
then this ledger's events, each attributed), the evidence level with its reason."""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.claims.events import NotApplied, Replayed, claim_ids, replay
from registry.claims.levels import Level, claim_level
from registry.claims.match import AxisMatch
from registry.claims.models import REDERIVED, ClaimBody, ClaimedIdentity, EventKind
from registry.errors import RegistryError
from registry.formats.display import figure_label, short_id
from registry.formats.metricwords import label
from registry.formats.record import PublishedFigure
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


class LabWord(Frozen):
    """What the lab's claim file states, verbatim: never re-derived, never re-labelled."""

    file: str = Field(description="the lab's claim file")
    status: str = Field(description="the lab's status word")
    level: str | None = Field(None, description="the evidence level the lab's packet states "
                                                "(STATUS.md), if any")
    figure: float | None = Field(None, description="the lab's verification figure, else its "
                                                   "claimed one")
    metric: str | None = Field(None, description="the metric in the lab's words and key "
                                                 "(e.g. `tok_s: average across repeat runs`)")


class Derived(Frozen):
    """What the registry derives for the claim from what its ledger holds."""

    level: Level
    figure: float | None = Field(None, description="re-derived from raw rows (a verification's "
                                                   "or a record's)")
    record: str | None = None
    series: str | None = Field(None, description="the packet's per-row series it came from")
    not_rederived: str | None = Field(None, description="why there is no re-derived figure")


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
    lab: LabWord | None = Field(None, description="what the lab's file states (imported)")
    derived: Derived = Field(description="what the registry derives: level with its reason, "
                                         "figure re-derived or why not")


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
            verification = ShownFigure(value=d.figure.value, metric=figure_label(d.figure.metric),
                                       date=e.time, record=d.figure.record or e.record,
                                       verification=e.verification)
    last = next((a.decision for a in reversed(r.events[1:]) if a.decision and a.decision.axes),
                None)
    level = claim_level(home, r)
    status = r.state.value if r.trusted else f"untrusted ({r.state.value} as signed)"
    return ClaimView(id=body.id, model=body.model, status=status, status_by=status_by,
                     claimed=claimed, verification=verification, history=history,
                     evidence_level=level, lab=_lab_word(body),
                     derived=_derived(home, body, verification, level),
                     lab_level=body.lab.raw.get("evidence_level") if body.lab else None,
                     identity=body.identity, evidence=body.evidence,
                     axes=last.axes if last else [], events=[a.id for a in r.events],
                     conflicts=r.conflicts, untrusted=r.untrusted,
                     trust="verified" if r.trusted else "untrusted", trust_reason=r.reason)


def _lab_word(body: ClaimBody) -> LabWord | None:
    lab = body.lab
    if lab is None:
        return None
    v = lab.verification
    figure = v.value if v is not None and v.value is not None else body.claimed.value
    metric = (v.metric if v is not None and v.metric is not None else body.claimed.metric)
    return LabWord(file=lab.path, status=lab.status, level=lab.raw.get("evidence_level"),
                   figure=figure, metric=f"tok_s: {metric.text}")


def _derived(home: Home, body: ClaimBody, verification: ShownFigure, level: Level) -> Derived:
    """The figure re-derived from raw rows: a verification's (this ledger's move), else
    a claim record's re-derivation of the cited figure; else why there is none."""
    if verification.verification is not None:  # a signed verification re-derived it
        return Derived(level=level, figure=verification.value, record=verification.record)
    again = _packet_rederived(body)
    if again is not None:
        return Derived(level=level, figure=again[0], series=again[1])
    why = "no record: the claim's evidence holds no run (log, rows, launch)"
    for rid in body.records:
        published = _published(home, rid)
        rows = next((f for f in published if f.rederived is not None), None)
        if rows is not None:
            return Derived(level=level, figure=rows.rederived, record=rid)
        note = next((f.note for f in published if f.note), None)
        why = (f"record {short_id(rid)} carries the lab's figure but no rows to re-derive it"
               + (f" ({note.split('not re-derived: ', 1)[-1]})" if note else ""))
    return Derived(level=level, not_rederived=why)


def _packet_rederived(body: ClaimBody) -> tuple[float, str] | None:
    """The verification's (else the claimed) figure re-derived from the packet's rows at
    import: (value, `N rows of SERIES, AGGREGATION`)."""
    found = body.lab.raw.get(REDERIVED) if body.lab else None
    rows = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
    rows.sort(key=lambda r: r.get("what") != "verification")
    for r in rows:
        value = r.get("value")
        if isinstance(value, int | float):
            return float(value), (f"{r.get('rows')} rows of {r.get('series')}, "
                                  f"{r.get('aggregation')}")
    return None


def _published(home: Home, rid: str) -> list[PublishedFigure]:
    from registry.store.query import sealed_statement

    try:
        return sealed_statement(home, rid)[1].predicate.published
    except RegistryError:  # a record this home cannot read: no figure, said as such
        return []
