"""The queue on the team's PostgreSQL: adding, listing and cancelling jobs.

A job is one procrastinate job (task `registry.fleet.job`, queue `hw:<identity>`) plus
one row of `registry_fleet_jobs` holding what procrastinate does not know: the target,
the phase a worker reached, the worker and host holding it, the records and
attestations it sealed, and the reason and log tail of its last failure. The state
shown is procrastinate's own (`todo` queued, `doing` running, ...), never a copy.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput, NotFound, Refused, UsageError
from registry.fleet.jobcheck import TASK, Kind, parse_args

if TYPE_CHECKING:
    import psycopg
    from procrastinate import App

ENV_QUEUE = "REGISTRY_QUEUE_URL"
ENV_DATABASE = "REGISTRY_DATABASE_URL"
MAX_ATTEMPTS = 3
"""Runs of one job before it stops retrying (a failure or a lost lease counts)."""

TABLE = """
CREATE TABLE IF NOT EXISTS registry_fleet_jobs (
    job_id bigint PRIMARY KEY,
    kind text NOT NULL,
    target text NOT NULL,
    control text,
    hardware text NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now(),
    started_at timestamptz,
    phase text NOT NULL DEFAULT 'queued',
    worker text,
    host text,
    home_queue text,
    records jsonb NOT NULL DEFAULT '[]',
    attestations jsonb NOT NULL DEFAULT '[]',
    pushed boolean NOT NULL DEFAULT false,
    reason text,
    log text,
    claim text,
    claim_moves jsonb NOT NULL DEFAULT '[]',
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE registry_fleet_jobs
    ADD COLUMN IF NOT EXISTS allow_env_drift boolean NOT NULL DEFAULT false;
"""

ARGS_GUARD = """
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'registry_job_args_object') THEN
    ALTER TABLE procrastinate_jobs ADD CONSTRAINT registry_job_args_object
      CHECK (jsonb_typeof(args) = 'object') NOT VALID;
  END IF;
END $$
"""
"""procrastinate's worker fails in its own code, and holds the job for good, on a row
whose arguments are not a JSON object: PostgreSQL refuses such a row (new rows only)."""


class State(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    cancelled = "cancelled"


_STATES = {"todo": State.queued, "doing": State.running, "succeeded": State.done,
           "failed": State.failed, "cancelled": State.cancelled, "aborted": State.cancelled,
           "aborting": State.running}


class Job(Frozen):
    id: int
    kind: Kind | None = Field(description="None when the row is not a job (`malformed`)")
    malformed: str | None = Field(None, description="why the queue row is not a job a "
                                                    "worker runs (jobcheck.py)")
    target: str = Field(description="the record reproduced (or side B of an A/B)")
    control: str | None = Field(None, description="the control record of a controlled "
                                                  "reproduction, side A of an A/B")
    hardware: str = Field(description="the hardware identity the job asks for")
    state: State
    phase: str = Field(description="the last step a worker reached: taken, engine, suite, "
                                   "sealing, sealed, pushing, done, failed, lost")
    attempts: int = Field(description="runs that ended (done, failed or lost); a running "
                                      "job's run is not counted yet")
    queue: str = Field(description="procrastinate queue: hw:<identity>, or home:<worker> "
                                   "when only the home holding its record may finish it")
    worker: str | None = None
    host: str | None = None
    records: list[str] = Field(default_factory=list)
    attestations: list[str] = Field(default_factory=list)
    pushed: bool = False
    claim: str | None = Field(None, description="the claim the job reproduces, if any")
    claim_moves: list[str] = Field(default_factory=list,
                                   description="what the job did to the claim, in order")
    allow_env_drift: bool = Field(False, description="queued with --allow-env-drift: the "
                                  "reproduction runs despite drift, recorded in its record")
    max_starts: int | None = Field(None, description="queued with --max-starts: the most "
                                   "starts a side, a pair at a time until decided")
    reason: str | None = None
    log: str | None = None
    added_at: datetime | None = Field(None, description="None before its row is written")
    started_at: datetime | None = None
    updated_at: datetime | None = None

    def what(self, width: int = 12) -> str:
        """The job in the words of the command it runs, each record id cut to `width`
        (`queue list` and the report's fleet page say it alike)."""
        target, control = self.target[:width], (self.control or "")[:width]
        if self.malformed or self.kind is None:
            return "malformed job"
        if self.kind is Kind.ab:
            return f"ab {control} vs {target}"
        if self.kind is Kind.controlled:
            return f"controlled {target} (control {control})"
        return f"{self.kind.value} {target}"


class QueueSummary(Frozen):
    jobs: list[Job]
    backlog: dict[str, int] = Field(description="queued jobs per hardware identity")
    hosts: dict[str, str] = Field(description="per worker, what it is doing now")


def queue_url(url: str | None = None) -> str:
    """The queue's PostgreSQL: the argument, else $REGISTRY_QUEUE_URL, else the team index
    ($REGISTRY_DATABASE_URL), as a libpq URL (SQLAlchemy's `+psycopg` dropped)."""
    found = url or os.environ.get(ENV_QUEUE) or os.environ.get(ENV_DATABASE)
    if not found:
        raise UsageError("no queue: set REGISTRY_QUEUE_URL (or REGISTRY_DATABASE_URL, the "
                         "team's PostgreSQL index)",
                         hint="export REGISTRY_QUEUE_URL=postgresql://user@host/db")
    libpq = found.replace("postgresql+psycopg://", "postgresql://", 1)
    if not libpq.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(f"queue URL {_safe(found)!r}: the queue lives on PostgreSQL",
                           hint="a postgresql:// URL; SQLite cannot be shared by hosts")
    return libpq


def _safe(url: str) -> str:
    """A URL without its password, for messages."""
    head, sep, tail = url.partition("@")
    return url if not sep or ":" not in head.split("//")[-1] else \
        head.rsplit(":", 1)[0] + ":***@" + tail


@contextmanager
def connect(url: str) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    """One connection, autocommit; an unreachable server is one clear error."""
    import psycopg
    from psycopg.rows import dict_row

    try:
        conn = psycopg.connect(url, autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as e:
        raise Refused(f"queue {_safe(url)}: cannot connect: {str(e).strip()}",
                      hint="is the team's PostgreSQL running, and the URL right?") from None
    with conn:
        yield conn


def app(url: str) -> App:
    """A procrastinate app on `url`; open it (sync or async) before use."""
    from procrastinate import App, PsycopgConnector

    return App(connector=PsycopgConnector(conninfo=url))


_ENSURED: set[str] = set()


def ensure_schema(url: str) -> None:
    """procrastinate's schema and the fleet table, created once (an advisory lock keeps
    two first workers from both applying it); checked once per process and URL."""
    if url in _ENSURED:
        return
    with connect(url) as conn:
        conn.execute("SELECT pg_advisory_lock(727027)")
        try:
            found = conn.execute("SELECT to_regclass('procrastinate_jobs') AS t").fetchone()
            if found is None or found["t"] is None:
                from procrastinate import App, SyncPsycopgConnector

                with App(connector=SyncPsycopgConnector(conninfo=url)).open() as sync:
                    sync.schema_manager.apply_schema()
            conn.execute(TABLE)
            conn.execute(ARGS_GUARD)
        finally:
            conn.execute("SELECT pg_advisory_unlock(727027)")
    _ENSURED.add(url)


def hardware_queue(identity: str) -> str:
    return f"hw:{identity}"


def add_job(url: str, kind: Kind, target: str, hardware: str,
            control: str | None = None, claim: str | None = None,
            allow_env_drift: bool = False, max_starts: int | None = None) -> Job:
    """Queue one job for `hardware`. procrastinate commits (and announces) the job on its
    own connection, so a worker may take it before the row below exists: both write the
    row with `ON CONFLICT DO NOTHING` (insert_row), whichever comes first."""
    from procrastinate import App, SyncPsycopgConnector

    ensure_schema(url)
    with App(connector=SyncPsycopgConnector(conninfo=url)).open() as sync, connect(url) as conn:
        more = {} if max_starts is None else {"max_starts": max_starts}
        job_id = sync.configure_task(TASK, queue=hardware_queue(hardware)).defer(
            kind=kind.value, target=target, control=control, claim=claim,
            allow_env_drift=allow_env_drift, **more)
        insert_row(conn, job_id, kind.value, target, hardware, control, claim,
                   allow_env_drift)
        return get_job(url, job_id, conn=conn)


def insert_row(conn: psycopg.Connection[dict[str, Any]], job_id: int, kind: str,
               target: str, hardware: str, control: str | None, claim: str | None,
               allow_env_drift: bool = False) -> None:
    """The job's row, unless it is there already (written by the other side of the race)."""
    conn.execute("INSERT INTO registry_fleet_jobs (job_id, kind, target, control, "
                 "hardware, claim, allow_env_drift) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                 "ON CONFLICT (job_id) DO NOTHING",
                 (job_id, kind, target, control, hardware, claim, allow_env_drift))


SELECT = """
SELECT f.*, j.id AS id, j.status::text AS status, j.attempts, j.queue_name, j.task_name,
       j.args AS args
  FROM procrastinate_jobs j LEFT JOIN registry_fleet_jobs f ON f.job_id = j.id
"""
"""Every queue row, with its fleet row when there is one: a row a database writer put
in procrastinate's table alone is listed too (malformed, when it is not a job)."""


def _job(row: dict[str, Any]) -> Job:
    """A queue row as a job. Its kind and records are read from the arguments the worker
    acts on (never from the fleet row beside them); a row that is not a job, or whose
    fleet row does not read, is a malformed job with the reason, never an error."""
    from pydantic import ValidationError

    try:
        args = parse_args(row["task_name"], row["args"])
    except InvalidInput as e:
        return _malformed(row, e.message)
    try:
        return Job(id=row["id"], kind=args.kind, target=args.target, control=args.control,
                   claim=args.claim, hardware=row["hardware"] or _hardware(row),
                   state=_state(row), phase=row["phase"] or "queued",
                   attempts=row["attempts"], queue=row["queue_name"], worker=row["worker"],
                   host=row["host"], records=row["records"] or [],
                   attestations=row["attestations"] or [], pushed=bool(row["pushed"]),
                   claim_moves=row["claim_moves"] or [], reason=row["reason"],
                   allow_env_drift=args.allow_env_drift, max_starts=args.max_starts,
                   log=row["log"], added_at=row["added_at"], started_at=row["started_at"],
                   updated_at=row["updated_at"])
    except ValidationError as e:
        return _malformed(row, f"its fleet row does not read ({e.errors()[0]['loc']})")


def _malformed(row: dict[str, Any], why: str) -> Job:
    """A row that is not a job: only what is surely text is kept from it."""
    def text(name: str) -> str | None:
        value = row.get(name)
        return value if isinstance(value, str) else None

    return Job(id=row["id"], kind=None, malformed=why, target="", hardware=_hardware(row),
               state=_state(row), phase=text("phase") or "queued", attempts=row["attempts"],
               queue=row["queue_name"], worker=text("worker"), host=text("host"),
               reason=text("reason"), log=text("log"))


def _hardware(row: dict[str, Any]) -> str:
    return str(row["queue_name"]).removeprefix("hw:")


def _state(row: dict[str, Any]) -> State:
    return _STATES.get(row["status"], State.queued)


def get_job(url: str, job_id: int, conn: psycopg.Connection[dict[str, Any]] | None = None
            ) -> Job:
    if conn is None:
        with connect(url) as c:
            return get_job(url, job_id, c)
    row = conn.execute(SELECT + " WHERE j.id = %s", (job_id,)).fetchone()
    if row is None:
        raise NotFound(f"no queued job {job_id}", hint="registry queue list")
    return _job(row)


def list_jobs(url: str, states: list[State] | None = None) -> QueueSummary:
    """Every job, oldest first, with the backlog per hardware and each worker's job."""
    ensure_schema(url)
    with connect(url) as conn:
        jobs = [_job(r) for r in conn.execute(SELECT + " ORDER BY j.id").fetchall()]
    backlog: dict[str, int] = {}
    hosts: dict[str, str] = {}
    for j in jobs:
        if j.state is State.queued:
            backlog[j.hardware] = backlog.get(j.hardware, 0) + 1
        if j.state is State.running and j.worker:
            hosts[j.worker] = f"job {j.id} {j.phase} ({j.what()})"
    shown = [j for j in jobs if not states or j.state in states]
    return QueueSummary(jobs=shown, backlog=backlog, hosts=hosts)


def cancel_job(url: str, job_id: int) -> Job:
    """Cancel a queued job; a running one is asked to abort (its worker stops it and the
    engine is torn down); a finished one is refused."""
    from procrastinate import App, SyncPsycopgConnector

    ensure_schema(url)
    job = get_job(url, job_id)
    if job.state not in (State.queued, State.running):
        raise Refused(f"job {job_id} is {job.state.value}: only a queued or running job "
                      "can be cancelled")
    with App(connector=SyncPsycopgConnector(conninfo=url)).open() as sync:
        sync.job_manager.cancel_job_by_id(job_id, abort=job.state is State.running)
    with connect(url) as conn:
        conn.execute("UPDATE registry_fleet_jobs SET reason = 'cancelled', "
                     "updated_at = now() WHERE job_id = %s", (job_id,))
    return get_job(url, job_id)


def note(conn: psycopg.Connection[dict[str, Any]], job_id: int, **fields: object) -> None:
    """Record what a worker reached (phase, worker, records, ...) on a job's row."""
    from psycopg.types.json import Jsonb

    names = sorted(fields)
    values = [Jsonb(fields[n]) if n in ("records", "attestations", "claim_moves")
              else fields[n]
              for n in names]
    sets = ", ".join(f"{n} = %s" for n in names)  # names are this package's, never input
    conn.execute(f"UPDATE registry_fleet_jobs SET {sets}, updated_at = now() "
                 "WHERE job_id = %s", (*values, job_id))
