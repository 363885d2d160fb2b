"""`registry worker`: take this host's jobs from the bench queue and run them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from registry.cli.options import HomeOpt, Json, find


def register(app: typer.Typer) -> None:
    app.command()(worker)


def worker(
    once: Annotated[bool, typer.Option("--once", help="Take at most one job, then stop.")]
    = False,
    max_jobs: Annotated[int | None, typer.Option(
        "--max-jobs", min=1, show_default=False, help="Stop after N jobs.")] = None,
    name: Annotated[str | None, typer.Option(
        "--name", show_default=False,
        help="This worker's name, the same after a restart (default: the host name).")]
    = None,
    remote: Annotated[str | None, typer.Option(
        "--remote", show_default=False,
        help="Team remote to pull from before and push to after each job (default: "
             "origin when the home has one; --remote '' for none).")] = None,
    work_dir: Annotated[Path, typer.Option(
        "--work-dir", help="Where the jobs' run directories are written.")] = Path("runs"),
    models: Annotated[Path | None, typer.Option(
        "--models", help="Folder that ${REGISTRY_MODELS} names (default: the variable).")]
    = None,
    heartbeat: Annotated[float, typer.Option(
        "--heartbeat", min=0.2, help="Seconds between lease renewals.")] = 10.0,
    stalled: Annotated[float, typer.Option(
        "--stalled", min=1.0,
        help="Seconds without a heartbeat after which a worker's jobs are put back.")] = 30.0,
    policy: Annotated[Path | None, typer.Option(
        "--policy", show_default=False,
        help="Host policy (TOML; docs/fleet.md). Default: the lab's rules: no retry of a "
             "faulted engine, 50 GiB reserve, SIGKILL after the grace.")] = None,
    show_hardware: Annotated[bool, typer.Option(
        "--show-hardware", help="Print this host's hardware identity; run nothing.")] = False,
    url: Annotated[str | None, typer.Option(
        "--url", show_default=False,
        help="The queue's PostgreSQL (default: $REGISTRY_QUEUE_URL, else "
             "$REGISTRY_DATABASE_URL).")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Take jobs whose hardware identity is this host's, run them, seal, attest and push
    the results. SIGTERM: the job in hand finishes, no new one is taken.

    Example: registry worker --max-jobs 10 --work-dir /scratch/runs
    """
    from registry.cli.output import console, print_json
    from registry.fleet.hardware import detect

    hw = detect()
    if show_hardware:
        print_json(hw) if json else console.print(hw.identity, highlight=False)
        return
    from registry.fleet.policy import load_policy
    from registry.fleet.queue import queue_url
    from registry.fleet.worker import WorkerOptions, default_name, serve
    from registry.team.remotes import load_remotes

    found = find(home)
    if remote is None:
        remote = "origin" if "origin" in load_remotes(found).remotes else ""
    opts = WorkerOptions(url=queue_url(url), name=name or default_name(), hardware=hw.identity,
                         once=once, max_jobs=max_jobs, heartbeat_s=heartbeat,
                         stalled_s=stalled, work_dir=work_dir, models_dir=models,
                         remote=remote or None, policy=load_policy(policy))
    report = serve(found, opts)
    if json:
        print_json(report)
    else:
        console.print(f"worker {report.name} ({report.hardware}): {len(report.jobs)} jobs, "
                      f"{len(report.failed)} failed, {len(report.reclaimed)} put back",
                      highlight=False)
