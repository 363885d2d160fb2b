"""`registry queue add|list|cancel`: the bench queue on the team's PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.app import new_app
from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import ID_DIGITS, short_id

if TYPE_CHECKING:
    from registry.fleet.queue import Job, QueueSummary

queue_app = new_app("The bench queue: reproductions and A/B jobs for the fleet's workers.")
UrlOpt = Annotated[str | None, typer.Option(
    "--url", show_default=False,
    help="The queue's PostgreSQL (default: $REGISTRY_QUEUE_URL, else $REGISTRY_DATABASE_URL).")]


def register(app: typer.Typer) -> None:
    app.add_typer(queue_app, name="queue")


@queue_app.command("add")
def add(
    what: Annotated[str, typer.Argument(
        show_default=False, help="A claim id (its record is reproduced and the claim moved), "
                                 "or a record id or prefix.")],
    control: Annotated[str | None, typer.Option(
        "--control", show_default=False,
        help="A controlled reproduction instead: CONTROL (record) runs in alternating "
             "starts beside WHAT, as `registry reproduce --control`.")] = None,
    ab: Annotated[str | None, typer.Option(
        "--ab", show_default=False,
        help="An A/B instead: CONTROL (record) is side A, WHAT side B.")] = None,
    hardware: Annotated[str | None, typer.Option(
        "--hardware", show_default=False,
        help="The hardware identity that must run it (default: the record's own host, "
             "e.g. nvidia-h200x1; `registry worker --show-hardware` prints a host's).")]
    = None,
    max_starts: Annotated[int | None, typer.Option(
        "--max-starts", show_default=False,
        help="With --control or --ab: after the first 2 starts a side go on a pair at a "
             "time until decided, at most this many starts a side (as `registry ab "
             "--max-starts`).")] = None,
    allow_env_drift: Annotated[bool, typer.Option(
        "--allow-env-drift",
        help="Run the reproduction despite environment drift (recorded in the new "
             "record), as `registry reproduce --allow-env-drift`.")] = False,
    url: UrlOpt = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Queue a reproduction of a claim or a record, a controlled reproduction, or an
    A/B against a control.

    Example: registry queue add 3f2a9c --control 81be07 --hardware intel-arc-pro-b70x4
    """
    from registry.cli.output import console, print_json
    from registry.fleet.submit import submit

    job = submit(find(home), what, control=control, ab=ab, hardware=hardware, url=url,
                 allow_env_drift=allow_env_drift, max_starts=max_starts)
    if json:
        print_json(job)
    else:
        console.print(f"job {job.id} queued: {job.what(ID_DIGITS)} on {job.hardware}"
                      + (" (environment drift allowed)" if job.allow_env_drift else "")
                      + (f" (up to {job.max_starts} starts a side)" if job.max_starts else ""),
                      highlight=False)


@queue_app.command("list")
def list_(
    state: Annotated[list[str] | None, typer.Option(
        "--state", show_default=False,
        help="Only jobs in this state (queued, running, done, failed, cancelled); "
             "repeatable.")] = None,
    url: UrlOpt = None,
    json: Json = False,
) -> None:
    """Every job with its state, attempts, holder and results; the backlog per hardware
    and what each worker is doing.

    Example: registry queue list --state running --json
    """
    from registry.cli.output import print_json
    from registry.errors import InvalidInput
    from registry.fleet.queue import State, list_jobs, queue_url

    try:
        states = [State(s) for s in state or []]
    except ValueError:
        raise InvalidInput(f"--state {state}: one of "
                           + ", ".join(s.value for s in State)) from None
    summary = list_jobs(queue_url(url), states)
    print_json(summary) if json else _print(summary)


def _print(summary: QueueSummary) -> None:
    from registry.cli.output import console, print_fitted, safe

    print_fitted(["job", "what", "hardware", "state", "phase", "try", "worker", "records"],
                 [_row(j) for j in summary.jobs],
                 keep=[True, False, True, True, True, True, False, False], title="jobs",
                 drop=[6, 4])  # when the words do not fit: the worker, then the phase
    backlog = ", ".join(f"{hw} {n}" for hw, n in sorted(summary.backlog.items())) or "none"
    console.print(f"backlog: {backlog}", highlight=False)
    for worker, doing in sorted(summary.hosts.items()):
        console.print(f"  {worker}: {doing}", highlight=False)
    for j in summary.jobs:
        if j.malformed:
            console.print(f"job {j.id}: {safe(j.malformed)}", highlight=False, soft_wrap=False,
                          markup=False)
        retried = j.state.value == "queued" and j.attempts > 0
        if j.reason and (j.state.value in ("failed", "cancelled") or retried):
            console.print(f"job {j.id}: {j.reason}", highlight=False, soft_wrap=False)
        for move in j.claim_moves:
            console.print(f"job {j.id} claim {move}", highlight=False, soft_wrap=False)


def _row(j: Job) -> list[str]:
    what = j.what(ID_DIGITS)  # one id length (formats/display.py); it may wrap at its spaces
    return [str(j.id), what, j.hardware, j.state.value, j.phase, str(j.attempts),
            j.worker or "-", " ".join(short_id(r) for r in j.records) or "-"]


@queue_app.command("cancel")
def cancel(
    job_id: Annotated[int, typer.Argument(show_default=False, help="The job's id.")],
    url: UrlOpt = None,
    json: Json = False,
) -> None:
    """Cancel a queued job, or ask a running one's worker to stop it.

    Example: registry queue cancel 42
    """
    from registry.cli.output import console, print_json
    from registry.fleet.queue import cancel_job, queue_url

    job = cancel_job(queue_url(url), job_id)
    if json:
        print_json(job)
    else:
        console.print(f"job {job.id}: {job.state.value}", highlight=False)
