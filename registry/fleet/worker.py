"""`registry worker`: take jobs for this host's hardware from the queue and run them.

procrastinate's worker holds each job under a lease: its heartbeat row in
`procrastinate_workers`, renewed every `heartbeat_s`. Every worker also reclaims the
jobs of workers whose heartbeat is older than `stalled_s` (killed, cut off, rebooted):
back to the hardware's queue, or, once the dead worker had begun sealing, to that
worker's own `home:<name>` queue, since only its home can hold what it sealed. A job
that failed or was lost `MAX_ATTEMPTS` times stops and says so. SIGTERM stops taking
jobs; the one in hand finishes (procrastinate's graceful stop).

The host policy (registry/fleet/policy.py, the lab's rules by default) decides the rest:
a held host takes nothing; orphaned engines of a killed worker are reaped first;
storage is admitted before each job, one job runs at a time on the host (its lane), and
an engine fault is not retried: one bounded probe, the host held for a person, the
worker stops taking jobs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import RegistryError
from registry.fleet.execute import Context, JobSpec, Outcome, run_job
from registry.fleet.failures import Hopeless, is_hopeless, retries
from registry.fleet.jobcheck import TASK
from registry.fleet.policy import HostPolicy
from registry.fleet.queue import (
    MAX_ATTEMPTS,
    connect,
    ensure_schema,
    hardware_queue,
    insert_row,
    note,
)

if TYPE_CHECKING:
    from procrastinate import App, JobContext
    from procrastinate.worker import Worker

    from registry.executor.engine import Launcher
    from registry.store.home import Home

log = logging.getLogger("registry.fleet")
SEALED = ("sealing", "sealed", "pushing")
HARD_KILLS = ("KILL group", "KILL container")  # a stop that needed SIGKILL
"""Phases after which the record may exist only in the worker's own home."""


class WorkerOptions(Frozen):
    url: str
    name: str = Field(description="this worker's name; `home:<name>` is its own queue")
    hardware: str
    once: bool = False
    max_jobs: int | None = None
    heartbeat_s: float = 10.0
    stalled_s: float = 30.0
    work_dir: Path
    models_dir: Path | None = None
    remote: str | None = None
    policy: HostPolicy = Field(default_factory=HostPolicy)


class WorkerReport(Frozen):
    name: str
    hardware: str
    queues: list[str]
    jobs: list[int] = Field(default_factory=list, description="jobs taken, in order")
    failed: list[int] = Field(default_factory=list)
    reclaimed: list[int] = Field(default_factory=list, description="jobs of lost workers "
                                                                   "this worker put back")
    reaped: list[int] = Field(default_factory=list, description="pids of orphaned engines "
                                                                "this worker stopped")
    held: list[str] = Field(default_factory=list, description="why the host is held for a "
                                                             "person (an engine fault)")


def home_queue(name: str) -> str:
    return f"home:{name}"


def default_name() -> str:
    return platform.node() or f"worker-{os.getpid()}"


def serve(home: Home, opts: WorkerOptions, launcher: Launcher | None = None,
          runner: Runner | None = None) -> WorkerReport:
    """Run the worker until SIGTERM, `--once`, or `--max-jobs` jobs; `runner` replaces
    what a job does (the queue benchmark measures the queue alone with it)."""
    from registry.store.writer import ready_signer

    ready_signer(home)  # a worker that cannot sign would fail every job: stop now
    if opts.remote is not None:  # nor can one whose remote is not there push any
        from registry.team.remotes import get_remote

        get_remote(home, opts.remote)
    _one_line_refusals()
    reaped = _prepare_host(opts.policy)
    ensure_schema(opts.url)
    opts.work_dir.mkdir(parents=True, exist_ok=True)
    report = WorkerReport(name=opts.name, hardware=opts.hardware,
                          queues=[hardware_queue(opts.hardware), home_queue(opts.name)],
                          reaped=reaped)
    asyncio.run(_serve(home, opts, launcher, report, runner or run_job))
    return report


async def _serve(home: Home, opts: WorkerOptions, launcher: Launcher | None,
                 report: WorkerReport, runner: Runner) -> None:
    from procrastinate.worker import Worker

    from registry.fleet.queue import app as make_app

    app = make_app(opts.url)
    limit = 1 if opts.once else opts.max_jobs
    async with app.open_async():
        worker = Worker(app, queues=report.queues, name=opts.name, concurrency=1,
                        wait=not opts.once, update_heartbeat_interval=opts.heartbeat_s,
                        stalled_worker_timeout=opts.stalled_s, listen_notify=True,
                        fetch_job_polling_interval=min(opts.heartbeat_s, 5.0))
        app.task(name=TASK, pass_context=True, retry=retries(MAX_ATTEMPTS))(
            _task(home, opts, launcher, report, worker, limit, runner))
        await _reclaim(app, opts, report, None)  # before taking anything: lost jobs first
        reclaimer = asyncio.create_task(_reclaim_loop(app, opts, report, worker))
        try:
            await worker.run()  # type: ignore[no-untyped-call]
        finally:
            reclaimer.cancel()


class _OneLine(logging.Filter):
    """procrastinate logs a failed job with its traceback; a refusal of the registry's own
    (its reason already on the job's row) is one line: the message, no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, RegistryError):
            record.msg, record.args = f"{record.getMessage()}: {error}", ()
            record.exc_info, record.exc_text = None, None
        return True


def _one_line_refusals() -> None:
    """procrastinate's job outcomes to stderr, a refusal as one line (once per process)."""
    logger = logging.getLogger("procrastinate")
    if any(isinstance(h, _Refusals) for h in logger.handlers):
        return
    handler = _Refusals()
    handler.addFilter(_OneLine())
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)
    logger.propagate = False


class _Refusals(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler _one_line_refusals installs (named, so that it is installed once)."""


def _prepare_host(policy: HostPolicy) -> list[int]:
    """Before any job: the host's stop policy set, a held host refused, and the engines
    a killed worker left stopped (by their pid files)."""
    from registry.executor.engine import set_stop_policy
    from registry.executor.orphans import reap
    from registry.fleet.policy import refuse_if_held

    refuse_if_held(policy)
    set_stop_policy(policy.stop)
    found = reap(policy.stop.pid_dir, policy.stop.grace_s, policy.stop.kill)
    for r in found:
        log.warning("reaped orphaned engine %s of dead worker %s: %s", r.pid, r.owner,
                    ", ".join(r.steps) + ("" if r.gone else " (still running)"))
    return [r.pid for r in found]


class EngineFault(Hopeless):
    """An engine fault under a policy that does not retry it: the host is held."""


class LeaseLost(RegistryError):
    """This worker no longer holds the job (its heartbeat was late and another worker put
    the job back): stop before sealing or pushing anything more."""


class Cancelled(RegistryError):
    """`registry queue cancel` asked the running job to stop."""


LEASE_LOST_EXIT = 75
"""The worker's exit status after it found it had lost a job's lease (EX_TEMPFAIL)."""


Runner = Callable[[JobSpec, Context], Outcome]


def _task(home: Home, opts: WorkerOptions, launcher: Launcher | None, report: WorkerReport,
          worker: Worker, limit: int | None, runner: Runner) -> Callable[..., None]:
    def job(context: JobContext, **args: object) -> None:
        j = context.job
        assert j.id is not None
        report.jobs.append(j.id)
        if limit is not None and len(report.jobs) >= limit:
            # this job is the last one: finish it, take no other
            worker.stop()  # type: ignore[no-untyped-call]
        spec = _job_spec(opts, j.id, j.task_name, args, j.attempts, report)
        try:
            held = _run(home, opts, launcher, spec, _Lease(j.id, j.worker_id, context),
                        runner)
            if held:
                report.held.append(held)
                worker.stop()  # type: ignore[no-untyped-call]  # the host waits for a person
        except LeaseLost as e:
            # procrastinate would now mark the job finished, although another worker may
            # hold it: a zombie must persist nothing, so it leaves (its supervisor restarts
            # it). The engine is already down: the executor tore it down on the way out.
            log.error("%s", e)
            os._exit(LEASE_LOST_EXIT)
        except Cancelled as e:
            from procrastinate.exceptions import JobAborted

            raise JobAborted(str(e)) from None
        except EngineFault as e:
            report.failed.append(j.id)
            report.held.append(e.message)
            worker.stop()  # type: ignore[no-untyped-call]  # the host waits for a person
            raise
        except BaseException:
            report.failed.append(j.id)
            raise

    return job


def _job_spec(opts: WorkerOptions, job_id: int, task: str, args: dict[str, object],
              attempts: int, report: WorkerReport) -> JobSpec:
    """The job a queue row asks for, or, when the row is not a job (any row a database
    writer inserts: jobcheck.py), the row failed at once with the reason: nothing runs,
    nothing is retried."""
    from registry.errors import InvalidInput
    from registry.fleet.jobcheck import parse_args

    try:
        asked = parse_args(task, args)
    except InvalidInput as e:
        reason = _failure(e, attempts + 1)
        with connect(opts.url) as conn:
            insert_row(conn, job_id, "malformed", "", opts.hardware, None, None)
            note(conn, job_id, phase="failed", worker=opts.name, host=platform.node(),
                 reason=reason)
        report.failed.append(job_id)
        raise Hopeless(reason) from None
    return JobSpec(id=job_id, queue=hardware_queue(opts.hardware), kind=asked.kind.value,
                   target=asked.target, control=asked.control, attempt=attempts,
                   claim=asked.claim, allow_env_drift=asked.allow_env_drift,
                   max_starts=asked.max_starts)


class _Lease:
    """Whether this worker still holds the job, asked at every phase: a worker whose
    heartbeat came late may have lost it to another, and must then stop (fencing)."""

    def __init__(self, job_id: int, worker_id: int | None, context: JobContext) -> None:
        self.job_id, self.worker_id, self.context = job_id, worker_id, context

    def check(self, conn: Any, phase: str) -> None:
        if self.context.should_abort():
            raise Cancelled(f"job {self.job_id} was cancelled at phase {phase}")
        row = conn.execute("SELECT status::text AS status, worker_id FROM procrastinate_jobs "
                           "WHERE id = %s", (self.job_id,)).fetchone()
        if row is None or row["status"] != "doing" or row["worker_id"] != self.worker_id:
            raise LeaseLost(f"job {self.job_id}: lease lost before phase {phase} (another "
                            "worker put it back); this attempt stops")


def _run(home: Home, opts: WorkerOptions, launcher: Launcher | None, spec: JobSpec,
         lease: _Lease, runner: Runner) -> str | None:
    """One job: every phase noted on its row; a failure keeps its reason and log tail and
    is raised again so that procrastinate retries it (or stops at MAX_ATTEMPTS). Returns
    why the host is now held, if its engine had to be killed."""
    with connect(opts.url) as conn:
        hardware = spec.queue.removeprefix("hw:")
        insert_row(conn, spec.id, spec.kind, spec.target, hardware, spec.control, spec.claim,
                   spec.allow_env_drift)
        note(conn, spec.id, phase="taken", worker=opts.name, host=platform.node(),
             home_queue=home_queue(opts.name), reason=None)
        conn.execute("UPDATE registry_fleet_jobs SET started_at = now() WHERE job_id = %s",
                     (spec.id,))
        _pause_for_tests("taken")

        def phase(name: str) -> None:
            lease.check(conn, name)
            note(conn, spec.id, phase=name)
            _pause_for_tests(name)

        ctx = Context(home=home, work_dir=opts.work_dir, phase=phase,
                      models_dir=opts.models_dir, remote=opts.remote, launcher=launcher)
        try:
            out = _guarded(opts, spec, ctx, runner)
        except LeaseLost:
            raise  # the job's row is another attempt's now: leave it alone
        except Cancelled:
            note(conn, spec.id, phase="cancelled", log=_log_tail(opts.work_dir, spec))
            raise
        except Exception as e:
            if _is_fault(e) and not opts.policy.retry_engine_faults:
                reason = _fault(opts, spec, e)
                note(conn, spec.id, phase="failed", log=_log_tail(opts.work_dir, spec),
                     reason=reason)
                raise EngineFault(reason) from e
            reason = _failure(e, spec.attempt + 1)
            note(conn, spec.id, phase="failed", log=_log_tail(opts.work_dir, spec),
                 reason=reason)
            if is_hopeless(e):
                raise Hopeless(reason) from e
            raise
        lease.check(conn, "done")
        killed = _hard_kill(opts, spec)
        note(conn, spec.id, phase="done", records=out.records,
             attestations=out.attestations, pushed=out.pushed, claim_moves=out.claim_moves,
             reason=f"verdict {out.verdict}" + (" (resumed: sealed by an earlier attempt)"
                                               if out.resumed else "")
             + (f" ({out.reused} of its starts sealed by an earlier attempt, reused)"
                if out.reused else "") + (f"; {killed}" if killed else ""))
        return killed


def _guarded(opts: WorkerOptions, spec: JobSpec, ctx: Context, runner: Runner) -> Outcome:
    """The job under the host policy: its storage admitted, then run in the host's lane."""
    from registry.fleet.policy import admit_storage, lane

    admit_storage(opts.policy, opts.work_dir)
    with lane(opts.policy):
        return runner(spec, ctx)


def _is_fault(e: Exception) -> bool:
    from registry.errors import EngineFailed

    return isinstance(e, EngineFailed)


def _fault(opts: WorkerOptions, spec: JobSpec, e: Exception) -> str:
    """An engine fault under the lab's rules: no retry; the evidence stays in the run
    directory; one bounded probe, kept beside it; the host held for a person."""
    from registry.base.files import write_model
    from registry.fleet.policy import health_probe, hold

    probe = health_probe(opts.policy)
    evidence = opts.work_dir / f"job-{spec.id}-probe.json"
    write_model(evidence, probe)
    why = str(e) if isinstance(e, RegistryError) else f"{type(e).__name__}: {e}"
    verdict = "passed" if probe.passed else f"FAILED (exit {probe.exit_code})"
    kernel = probe.kernel_log.note if probe.kernel_log else "not read"
    reason = (f"engine fault, not retried (host policy): {why}; health probe "
              f"`{' '.join(probe.argv)}` {verdict} in {probe.seconds} s, kernel log: "
              f"{kernel} ({evidence}); "
              f"host held for a person: {opts.policy.hold_file}")
    hold(opts.policy, reason, spec.id, str(evidence))
    return reason


def _hard_kill(opts: WorkerOptions, spec: JobSpec) -> str | None:
    """A start of this job whose engine needed SIGKILL: under the lab's rules a hard
    kill of a busy job is itself a fault, so the host is held (the job's results stand:
    the stop came after them)."""
    import json

    from registry.fleet.policy import hold

    if not opts.policy.hard_kill_is_fault:
        return None
    attempt = spec.attempt + 1
    runs = [opts.work_dir / f"job-{spec.id}-attempt-{attempt}",
            *sorted((opts.work_dir / f"job-{spec.id}-{spec.kind}-{attempt}").glob("*/"))]
    for run in runs:
        try:
            cleanup = json.loads((run / "status.json").read_text()).get("cleanup") or {}
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(cleanup, dict) and cleanup.get("stopped_by") in HARD_KILLS:
            reason = (f"the engine of {run.name} ignored SIGTERM and was killed (SIGKILL of "
                      f"its group): a hard kill is a fault; host held for a person: "
                      f"{opts.policy.hold_file}")
            hold(opts.policy, reason, spec.id, str(run))
            return reason
    return None


def _failure(e: Exception, run: int) -> str:
    """The reason a failed run leaves on its job: retried, or why not."""
    why = str(e) if isinstance(e, RegistryError) else f"{type(e).__name__}: {e}"
    if is_hopeless(e):
        return f"not retried, no retry can fix it: {why}"
    if run >= MAX_ATTEMPTS:
        return f"failed {run} times, not retried: {why}"
    return f"attempt {run} of {MAX_ATTEMPTS} failed, retried: {why}"


def _log_tail(work_dir: Path, spec: JobSpec, limit: int = 4000) -> str | None:
    """The end of the failed attempt's engine log, kept on the job's row: its run
    directory's, or its last start's in a job of several starts."""
    attempt = spec.attempt + 1
    logs = [work_dir / f"job-{spec.id}-attempt-{attempt}" / "server.log",
            *sorted((work_dir / f"job-{spec.id}-{spec.kind}-{attempt}").glob("*/server.log"),
                    reverse=True)]
    for log_file in logs:
        if log_file.is_file():
            return log_file.read_bytes()[-limit:].decode("utf-8", "replace")
    return None


PAUSE_ENV = "REGISTRY_FLEET_PAUSE_AT"


def _pause_for_tests(phase: str) -> None:
    """`REGISTRY_FLEET_PAUSE_AT=PHASE:SECONDS` holds a worker at a phase, so that a test
    can kill it there (test-only; docs/fleet.md)."""
    spec = os.environ.get(PAUSE_ENV, "")
    name, _, seconds = spec.partition(":")
    if name == phase:
        import time

        time.sleep(float(seconds or 30))


async def _reclaim_loop(app: App, opts: WorkerOptions, report: WorkerReport,
                        worker: Worker) -> None:
    while True:
        await asyncio.sleep(opts.heartbeat_s)
        try:
            await _reclaim(app, opts, report, worker.worker_id)
        except Exception as e:  # the next round tries again; the worker keeps working
            log.warning("reclaiming lost jobs failed: %s", e)


async def _reclaim(app: App, opts: WorkerOptions, report: WorkerReport,
                   me: int | None) -> None:
    """Put back the jobs of workers whose lease (heartbeat) ran out; never this worker's
    own (`me`): it knows it is alive, however late its heartbeat."""
    from procrastinate.jobs import Status

    stalled = await app.job_manager.get_stalled_jobs(
        seconds_since_heartbeat=opts.stalled_s, task_name=TASK)
    for job in stalled:
        assert job.id is not None
        if me is not None and job.worker_id == me:
            continue
        row = await asyncio.to_thread(_row, opts.url, job.id)
        phase, holder = (row or {}).get("phase"), (row or {}).get("home_queue")
        queue = holder if phase in SEALED and holder else None
        last = job.attempts + 1 >= MAX_ATTEMPTS
        try:
            if last:
                await app.job_manager.finish_job(job, status=Status.FAILED, delete_job=False)
            else:
                await app.job_manager.retry_job(job, queue=queue)
        except Exception:  # another worker put it back first
            continue
        report.reclaimed.append(job.id)
        who = (row or {}).get("worker")
        reason = (f"worker {who} lost its lease at phase {phase}"
                  + (f"; back to {queue} (its home holds what it sealed)" if queue else "")
                  + (f"; lost {job.attempts + 1} times, not retried" if last else ""))
        await asyncio.to_thread(_lost, opts.url, job.id, reason)


def _row(url: str, job_id: int) -> dict[str, Any] | None:
    with connect(url) as conn:
        return conn.execute("SELECT phase, worker, home_queue FROM registry_fleet_jobs "
                            "WHERE job_id = %s", (job_id,)).fetchone()


def _lost(url: str, job_id: int, reason: str) -> None:
    with connect(url) as conn:
        note(conn, job_id, phase="lost", reason=reason)
