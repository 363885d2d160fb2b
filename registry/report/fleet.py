"""The report's fleet page (`registry report --fleet`): the bench queue's backlog per
hardware identity, what each worker is doing, and every job with its state, attempts,
holder, results (linked when the record is in the report), the claim it moved and
its reason."""

from __future__ import annotations

from collections.abc import Collection

from registry.fleet.queue import Job, QueueSummary
from registry.report.html import Html, esc, link, page, section, short, table
from registry.report.pages import PATHS

PATH = "fleet.html"
STATUS = {"done": "passed", "failed": "failed", "cancelled": "skipped",
          "running": "changed", "queued": "unresolved"}
"""Each state's colour: a class the stylesheet already has (the word stays the state)."""


def fleet_page(summary: QueueSummary, shown: Collection[str]) -> str:
    """One page; `shown` are the records the report has pages for."""
    backlog = table(["hardware", "queued"], [[hw, str(n)] for hw, n in
                                             sorted(summary.backlog.items())])
    hosts = table(["worker", "doing"], [[w, doing] for w, doing in
                                        sorted(summary.hosts.items())])
    jobs = table(["job", "what", "hardware", "state", "phase", "attempts", "worker",
                  "records", "attestations", "claim moved", "reason"],
                 [_row(j, shown) for j in summary.jobs], cls="sortable")
    body = [section("backlog", backlog if summary.backlog else Html("<p>none</p>")),
            section("workers", hosts if summary.hosts else Html("<p>none running</p>")),
            section("jobs", jobs)]
    return page("bench queue", "\n".join(body), depth=0)


def _row(j: Job, shown: Collection[str]) -> list[Html | str]:
    return [str(j.id), j.what(), j.hardware, status_word(j.state.value), j.phase,
            str(j.attempts), j.worker or "", _records(j.records, shown),
            " ".join(short(a) for a in j.attestations), "; ".join(j.claim_moves),
            "; ".join(filter(None, (j.malformed, j.reason)))]


def status_word(state: str) -> Html:
    return Html(f'<span class="status s-{STATUS.get(state, "")}">{esc(state)}</span>')


def _records(ids: list[str], shown: Collection[str]) -> Html:
    return Html(" ".join(str(link(PATHS.record(r), short(r))) if r in shown else
                         str(esc(short(r))) for r in ids))
