"""Running one job on this host, at most once: a reproduction or an A/B through the
executor, sealed into this home, attested, pushed to the team remote.

A reproduction's run directory gets `fleet-job.json` (the job's id and queue) before
its suite starts, so the record it seals names the job among its signed subjects.
Before anything runs, the home is searched for such a record: a retried job whose
first attempt already sealed finds it and finishes from there, never sealing twice.
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

if TYPE_CHECKING:
    from registry.executor.engine import Launcher
    from registry.store.home import Home

TAG = "fleet-job.json"


class Outcome(Frozen):
    records: list[str]
    attestations: list[str]
    verdict: str
    pushed: bool
    resumed: bool = False
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


def tag_bytes(job: JobSpec) -> bytes:
    """The tag file's exact bytes: the same for every attempt of one job."""
    return canonical_bytes({"job": job.id, "queue": job.queue})


def run_job(job: JobSpec, ctx: Context) -> Outcome:
    """Run `job` here, or finish what an earlier attempt of it sealed."""
    from registry.team.remotes import get_remote
    from registry.team.sync import pull, push

    remote = get_remote(ctx.home, ctx.remote) if ctx.remote is not None else None
    if remote is not None:
        pull(ctx.home, remote)  # the target record, and what other hosts sealed
    moves = [claimjobs.start(ctx.home, job.claim)] if job.claim else []
    outcome = _reproduce(job, ctx) if job.kind == "reproduce" else _ab(job, ctx)
    ctx.phase("sealed")
    if job.claim:
        moves.append(claimjobs.finish(ctx.home, job.claim, next(iter(outcome.attestations),
                                                                 None),
                                      outcome.verdict == "passed"))
        outcome = outcome.model_copy(update={"claim_moves": moves})
    if remote is not None:
        ctx.phase("pushing")
        push(ctx.home, remote)
    return outcome.model_copy(update={"pushed": remote is not None})


def _reproduce(job: JobSpec, ctx: Context) -> Outcome:
    from registry.executor.run import Hooks
    from registry.reproduce import reproduce
    from registry.store.query import resolve_id

    target = resolve_id(ctx.home, job.target)
    sealed = tagged_record(ctx.home, target, tag_bytes(job))
    if sealed is not None:
        return _resumed(ctx.home, target, sealed)
    run_dir = ctx.work_dir / f"job-{job.id}-attempt-{job.attempt + 1}"

    def suite(_: int) -> None:
        (run_dir / TAG).write_bytes(tag_bytes(job))
        ctx.phase("suite")

    def sealing(_: int) -> None:
        if "sealing" not in ctx.seen:
            ctx.seen.add("sealing")
            ctx.phase("sealing")

    ctx.seen.discard("sealing")
    done = reproduce(ctx.home, target, out_dir=run_dir, models_dir=ctx.models_dir,
                     hooks=Hooks(waiting=_once(ctx, "engine"), suite=suite),
                     progress=sealing, launcher=ctx.launcher)
    assert done.record is not None
    return Outcome(records=[done.record], attestations=[done.verification] if
                   done.verification else [], verdict="passed" if done.passed else "failed",
                   pushed=False)


def _once(ctx: Context, phase: str) -> Callable[[float], None]:
    def tell(_: float) -> None:
        if phase not in ctx.seen:
            ctx.seen.add(phase)
            ctx.phase(phase)

    ctx.seen.discard(phase)
    return tell


def tagged_record(home: Home, target: str, tag: bytes) -> str | None:
    """The record of this home reproducing `target` whose signed subjects hold `tag`."""
    import hashlib

    from registry.store.query import find_records, sealed_statement

    want = hashlib.sha256(tag).hexdigest()
    for row in find_records(home):
        if row.parent != target:
            continue
        _, statement = sealed_statement(home, row.id)
        if any(s.name == TAG and s.digest.get("sha256") == want for s in statement.subject):
            return row.id
    return None


def _resumed(home: Home, target: str, record: str) -> Outcome:
    """An earlier attempt sealed `record`: its attestation, if it got that far."""
    from registry.store.verifications import verifications_of

    found = [v for v in verifications_of(home, record)
             if v.statement.predicate.records.get("reproduction") == record]
    if not found:
        raise Refused(f"record {record[:16]} was sealed by an earlier attempt of this job, "
                      "but its verification was not: not sealed again",
                      hint=f"registry reproduce {target[:16]} to judge it by hand")
    v = found[0]
    return Outcome(records=[record], attestations=[v.id],
                   verdict=v.statement.predicate.result.value, pushed=False, resumed=True)


def _ab(job: JobSpec, ctx: Context) -> Outcome:
    from registry.ab.runner import ab

    assert job.control is not None
    ctx.phase("engine")
    done = ab(ctx.home, job.control, job.target, out_dir=ctx.work_dir / f"job-{job.id}-ab-"
              f"{job.attempt + 1}", models_dir=ctx.models_dir, launcher=ctx.launcher)
    return Outcome(records=[s.record for s in done.starts],
                   attestations=[done.verification] if done.verification else [],
                   verdict=done.verdict, pushed=False)
