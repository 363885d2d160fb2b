"""The report's claims page: each claim as the lab states it beside what this registry
derives (claimed figure, verified figure, the lab's evidence level and the derived one
with its reason), then its whole history, attributed. Read from the same views as
`registry claim list` and `claim show` (registry/claims/view.py), so the words agree."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from registry.claims.view import ClaimView, ShownFigure, UnreadClaim
from registry.formats.display import number, short_id
from registry.report.html import Html, esc, link, page, status, table

PATH = "claims.html"


def claims_page(listed: Sequence[ClaimView | UnreadClaim], shown: Collection[str]) -> str:
    """`shown`: the record ids the site has a page for (others are named, not linked); a
    claim whose events do not verify is listed with the reason, as `claim list` does."""
    claims = [c for c in listed if isinstance(c, ClaimView)]
    unread = [c for c in listed if isinstance(c, UnreadClaim)]
    rows = [[Html(f'<a href="#{esc(c.id)}">{esc(c.id)}</a><br>'
                  f'<span class="muted">{esc(c.model or "model not named")}</span>'),
             Html(f"{status(c.status)}<br><span class=\"muted\" title=\"{esc(c.status_by)}\">"
                  f"stated by {esc(_who(c.status_by))}</span>"),
             _figure(c.claimed), _figure(c.verification, shown),
             Html(f"lab: {esc(c.lab_level or 'states none')}<br>registry: "
                  f"{status(c.evidence_level.level)}<br><span class=\"muted small\">"
                  f"{esc(c.evidence_level.reason)}</span>")]
            for c in claims]
    body = [Html(f"<p>{len(listed)} claims: the lab's word (its status, figure and level) "
                 "beside what this registry derives from signed records.</p>"),
            table(["claim, model", "status", "claimed", "verified",
                   "evidence level: the lab's, the registry's"], rows, cls="sortable wide",
                  kinds=["", "", "", "", ""])]
    if unread:
        body.append(Html("<h2>not shown</h2>" + table(["claim", "why"], [
            [c.id, c.reason] for c in unread])))
    for c in claims:
        history = table(["date", "by", "event"], [
            [h.date or "-", _who(h.by), h.event] for h in c.history], kinds=["ident", "ident", ""])
        body.append(Html(f'<section id="{esc(c.id)}"><h2>{esc(c.id)}</h2>{history}</section>'))
    return page("claims", "\n".join(body), depth=0)


def _who(by: str) -> str:
    """`lab` for the lab's own statements (its file in the page's history), else a key."""
    return "the lab" if by.startswith("lab (") else f"key {short_id(by)}"


def _figure(f: ShownFigure, shown: Collection[str] = ()) -> Html | str:
    if f.value is None:
        return "-"
    text = Html(f"<b>{esc(number(f.value))}</b>" + (
        f'<br><span class="muted small">{esc(f.metric)}</span>' if f.metric else ""))
    if f.record:
        target = (link(f"records/{f.record}.html", short_id(f.record)) if f.record in shown
                  else esc(short_id(f.record)))
        text = Html(f"{text}<br>record {target}")
    return text
