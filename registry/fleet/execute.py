"""Running one job on this host, sealing at most once: a reproduction, a controlled
reproduction or an A/B through the executor, sealed into this home, attested, pushed
to the team remote.

Every run directory gets `fleet-job.json` (the job's id and queue, and for a job of
several starts the start's run directory name) before its suite starts, so each record
it seals names the job among its signed subjects. Before anything runs, the home (just
pulled from the team remote) is searched for such records: a retried job finds what an
earlier attempt sealed, takes those records as they are, runs only the starts that are
missing, and seals its attestation only if no attempt did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen
from registry.errors import Refused
from registry.fleet import claimjobs
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.executor.engine import Launcher
    from registry.store.home import Home

TAG = "fleet-job.json"
STARTS = 2
"""Starts of each side in a controlled reproduction or an A/B job (ABBA)."""
SIDES = ("A", "B", "record", "control")
"""The sides of a job's starts: an A/B's, a controlled reproduction's."""


class Outcome(Frozen):
    records: list[str]
    attestations: list[str]
    verdict: str
    pushed: bool
    resumed: bool = False
    reused: int = Field(0, description="starts an earlier attempt sealed, taken as they are")
    claim_moves: list[str] = Field(default_factory=list)


@dataclass
class JobSpec:
    id: int
    queue: str
    kind: str
    target: str
    control: str | None = None
    attempt: int = 0
    claim: str | None = None
    allow_env_drift: bool = False
    max_starts: int | None = None


@dataclass
class Context:
    """Where and how this host runs jobs; `phase` is told each step reached."""

    home: Home
    work_dir: Path
    phase: Callable[[str], None]
    models_dir: Path | None = None
    remote: str | None = None
    launcher: Launcher | None = None
    seen: set[str] = field(default_factory=set)


def tag_bytes(job: JobSpec, start: str | None = None) -> bytes:
    """The tag file's exact bytes: the same for every attempt of one job (and, in a job
    of several starts, of one start, named by its run directory)."""
    doc: dict[str, object] = {"job": job.id, "queue": job.queue}
    if start is not None:
        doc["start"] = start
    return canonical_bytes(doc)


def run_job(job: JobSpec, ctx: Context) -> Outcome:
    """Run `job` here, or finish what an earlier attempt of it sealed."""
    from registry.team.remotes import get_remote
    from registry.team.sync import pull, push

    remote = get_remote(ctx.home, ctx.remote) if ctx.remote is not None else None
    if remote is not None:
        pull(ctx.home, remote)  # the target record, and what other hosts sealed
    check_job(ctx.home, job)  # before anything runs: only what the ledger holds
    outcome = _reproduce(job, ctx) if job.kind == "reproduce" else _starts(job, ctx)
    ctx.phase("sealed")
    if job.claim:  # only after the run, and only the claim resting on this record
        moves = [claimjobs.start(ctx.home, job.claim),
                 claimjobs.finish(ctx.home, job.claim, next(iter(outcome.attestations), None),
                                  outcome.verdict == "passed")]
        outcome = outcome.model_copy(update={"claim_moves": moves})
    if remote is not None:
        ctx.phase("pushing")
        push(ctx.home, remote)
    return outcome.model_copy(update={"pushed": remote is not None})


def check_job(home: Home, job: JobSpec) -> None:
    """The job's arguments read again as a job's (jobcheck.py), then checked against
    this home's verified ledger: NotFound or InvalidInput, which no retry fixes."""
    from registry.fleet.jobcheck import TASK, check_in_ledger, parse_args

    more = {} if job.max_starts is None else {"max_starts": job.max_starts}
    asked = parse_args(TASK, {"kind": job.kind, "target": job.target,
                              "control": job.control, "claim": job.claim, **more})
    check_in_ledger(home, asked)


def _reproduce(job: JobSpec, ctx: Context) -> Outcome:
    from registry.executor.run import Hooks
    from registry.reproduce import reproduce
    from registry.store.query import resolve_id

    target = resolve_id(ctx.home, job.target)
    sealed = tagged(ctx.home, {_digest(tag_bytes(job)): ""})
    if sealed:
        resumed = _resumed(ctx.home, list(sealed.values()))
        if resumed is None:
            raise Refused(f"record {short_id(sealed[''])} was sealed by an earlier attempt of "
                          "this job, but its verification was not: not sealed again",
                          hint=f"registry reproduce {short_id(target)} to judge it by hand")
        return resumed
    run_dir = ctx.work_dir / f"job-{job.id}-attempt-{job.attempt + 1}"

    def suite(_: int) -> None:
        (run_dir / TAG).write_bytes(tag_bytes(job))
        ctx.phase("suite")

    done = reproduce(ctx.home, target, out_dir=run_dir, models_dir=ctx.models_dir,
                     allow_env_drift=job.allow_env_drift,
                     hooks=Hooks(waiting=_once(ctx, "engine"), suite=suite),
                     progress=_once(ctx, "sealing"), launcher=ctx.launcher)
    assert done.record is not None
    return Outcome(records=[done.record], attestations=[done.verification] if
                   done.verification else [], verdict="passed" if done.passed else "failed",
                   pushed=False)


def _starts(job: JobSpec, ctx: Context) -> Outcome:
    """A controlled reproduction (`control` the control record) or an A/B (`control`
    side A, `target` side B): STARTS engine starts of each side, then a pair at a time up
    to the job's `max_starts` until decided, each sealed and tagged.
    From the first seal on, the job's records may be in this home alone (the worker
    routes a lost job back to it: docs/fleet.md)."""
    from registry.ab.runner import ab
    from registry.executor.run import Hooks
    from registry.reproduce import reproduce

    assert job.control is not None
    names = [f"{i:02d}-{side}" for i in range(2 * (job.max_starts or STARTS))
             for side in SIDES]
    sealed = tagged(ctx.home, {_digest(tag_bytes(job, n)): n for n in names})
    resumed = _resumed(ctx.home, [sealed[n] for n in sorted(sealed)]) if sealed else None
    if resumed is not None:
        return resumed

    def tag(run_dir: Path) -> None:
        (run_dir / TAG).write_bytes(tag_bytes(job, run_dir.name))

    hooks = Hooks(waiting=_once(ctx, "engine"), suite=_once(ctx, "suite"), ready=tag)
    out = ctx.work_dir / f"job-{job.id}-{job.kind}-{job.attempt + 1}"
    sealing = _once(ctx, "sealing")
    if job.kind == "ab":
        result = ab(ctx.home, job.control, job.target, starts=STARTS,
                    max_starts=job.max_starts, out_dir=out,
                    models_dir=ctx.models_dir, hooks=hooks, progress=sealing,
                    launcher=ctx.launcher, sealed=sealed)
        return Outcome(records=[s.record for s in result.starts],
                       attestations=[result.verification] if result.verification else [],
                       verdict=result.verdict, pushed=False, reused=len(sealed))
    done = reproduce(ctx.home, job.target, control=job.control, starts=STARTS,
                     max_starts=job.max_starts, out_dir=out,
                     allow_env_drift=job.allow_env_drift,
                     models_dir=ctx.models_dir, hooks=hooks, progress=sealing,
                     launcher=ctx.launcher, sealed=sealed)
    assert done.controlled is not None
    return Outcome(records=[s.record for s in done.controlled.starts],
                   attestations=[done.verification] if done.verification else [],
                   verdict="passed" if done.passed else "failed", pushed=False,
                   reused=len(sealed))


def _once(ctx: Context, phase: str) -> Callable[[float], None]:
    """Tells `phase` the first time it is called in this attempt, never again."""
    def tell(_: float) -> None:
        if phase not in ctx.seen:
            ctx.seen.add(phase)
            ctx.phase(phase)

    ctx.seen.discard(phase)
    return tell


def _digest(tag: bytes) -> str:
    import hashlib

    return hashlib.sha256(tag).hexdigest()


def tagged(home: Home, wanted: dict[str, str]) -> dict[str, str]:
    """Per name of `wanted` (tag digest -> name), the committed record of this home whose
    signed subjects hold that tag: what earlier attempts of a job sealed. Every job
    searches the whole ledger, so it is a byte search for the digests first (a few
    microseconds a record); only a statement holding one, and still hashing to its id,
    is parsed."""
    from registry.formats.record import parse_statement, record_id
    from registry.store.ledger import STATEMENT, committed_ids, folder_at

    needles = [d.encode() for d in wanted]
    found: dict[str, str] = {}
    for rid in committed_ids(home.ledger):
        try:
            data = (folder_at(home.ledger, rid) / STATEMENT).read_bytes()
        except OSError:
            continue
        if not any(n in data for n in needles) or record_id(data) != rid:
            continue
        for subject in parse_statement(data).subject:
            name = wanted.get(subject.digest.get("sha256", "")) if subject.name == TAG else None
            if name is not None:
                found[name] = rid
    return found


def _resumed(home: Home, records: list[str]) -> Outcome | None:
    """The job's attestation, when an earlier attempt got that far: the one of
    `reproduce` or `ab` that judged the job's first record."""
    from registry.store.verifications import verifications_of

    first = records[0]
    for v in verifications_of(home, first):
        roles = v.statement.predicate.records
        if first in (roles.get("reproduction"), roles.get("start-0-A")):
            return Outcome(records=records, attestations=[v.id],
                           verdict=v.statement.predicate.result.value, pushed=False,
                           resumed=True)
    return None
