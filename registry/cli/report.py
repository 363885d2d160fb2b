"""`registry report`: a static HTML site for chosen records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import short_id


def register(app: typer.Typer) -> None:
    app.command()(report)


def report(
    records: Annotated[list[str] | None, typer.Argument(
        show_default=False, help="Record ids or prefixes (default: every record chosen).")] = None,
    where: Annotated[list[str] | None, typer.Option(
        "--where", show_default=False,
        help="FIELD OP VALUE, OP one of = != < <= > >= (typed: numbers as numbers).")] = None,
    lane: Annotated[str | None, typer.Option(
        "--lane", show_default=False, help="Only the records of this lane.")] = None,
    out: Annotated[Path, typer.Option(
        "--out", help="Folder to write (new, empty, or an earlier report).")] = Path("report"),
    diff: Annotated[tuple[str, str] | None, typer.Option(
        "--diff", show_default=False, metavar="A B",
        help="A diff page of two records you pick (ids or prefixes), linked from the "
             "index; both records are shown.")] = None,
    fleet: Annotated[bool, typer.Option(
        "--fleet", help="Add fleet.html: the bench queue's backlog, workers and jobs "
                        "($REGISTRY_QUEUE_URL, else $REGISTRY_DATABASE_URL).")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Write a static HTML report (no network needed to open it): an index, a page per
    record, diffs, lane histories and the logs the evidence points into.

    Example: registry report --lane tiny-bf16-exact --out report && open report/index.html
    """
    from registry.cli.output import console, print_json
    from registry.report import Selection, build_report

    queue = None
    if fleet:
        from registry.fleet.queue import list_jobs, queue_url

        queue = list_jobs(queue_url())
    summary = build_report(find(home), out, Selection(ids=records or [], where=where or [],
                                                       lane=lane, diffs=[diff] if diff else []),
                         fleet=queue)
    if json:
        print_json(summary)
        return
    counts = ", ".join(f"{n} {kind}" for kind, n in summary.pages.items() if kind != "index")
    console.print(f"wrote {summary.index} ({counts}) in {summary.seconds:.1f} s",
                  highlight=False)
    for s in summary.skipped:
        console.print(f"not shown {short_id(s.id)}: {s.reason}", highlight=False)

