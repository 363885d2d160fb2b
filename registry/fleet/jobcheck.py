"""What a job may ask, checked before a worker acts on it.

Anyone who can write the queue's PostgreSQL can insert a `procrastinate_jobs` row with
any task name and any arguments. So a job's arguments are read as data, never trusted:
a job names only what the signed ledger holds (a record id, a claim id), in exactly the
shape `registry queue add` writes. Anything else (an unknown kind, a path, an object
where an id belongs, an extra or missing argument, another task) is malformed: the
queue's views list it as such, and a worker fails it once, not retried, with the
reason. A well-formed job is then checked against the worker's pulled, verified
ledger: its records must be sealed there, and its claim must rest on its record.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, StringConstraints, ValidationError

from registry.base.model import Frozen
from registry.errors import InvalidInput, NotFound
from registry.formats.display import short_id
from registry.measure.sequential import MOST_STARTS

if TYPE_CHECKING:
    from registry.store.home import Home

TASK = "registry.fleet.job"
"""The one procrastinate task a worker runs; a row naming any other is malformed."""


class Kind(StrEnum):
    reproduce = "reproduce"
    controlled = "controlled"  # `registry reproduce TARGET --control CONTROL`
    ab = "ab"  # `registry ab CONTROL TARGET`

RecordId = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{64}$")]
ClaimId = Annotated[str, StringConstraints(strict=True, pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$")]


class JobArgs(Frozen):
    """The arguments of a job, exactly as `registry queue add` defers them."""

    kind: Kind = Field(description="reproduce, controlled or ab")
    target: RecordId = Field(description="the full id of a record (side B of an A/B)")
    control: RecordId | None = Field(description="the control record, side A of an A/B")
    claim: ClaimId | None = Field(None, description="the claim the job reproduces")
    max_starts: int | None = Field(None, strict=True, ge=2, le=MOST_STARTS,
                                   description="a controlled reproduction or A/B goes on a "
                                   "pair at a time until decided, at most this many starts "
                                   "a side (`queue add --max-starts`)")
    allow_env_drift: bool = Field(False, strict=True, description="reproduce despite "
                                  "environment drift (`queue add --allow-env-drift`)")


def parse_args(task: str | None, args: object) -> JobArgs:
    """The job's arguments, or InvalidInput saying why they are not a job's."""
    if task != TASK:
        raise InvalidInput(f"malformed job: task {str(task)[:60]!r} is not {TASK}")
    if not isinstance(args, dict):
        raise InvalidInput("malformed job: its arguments are not an object")
    try:
        parsed = JobArgs.model_validate(args)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])[:60] or "arguments"
        raise InvalidInput(f"malformed job: {where}: {_said(err)}") from None
    if (parsed.control is None) != (parsed.kind is Kind.reproduce):
        raise InvalidInput(f"malformed job: a {parsed.kind.value} job "
                           + ("takes no control record" if parsed.kind is Kind.reproduce
                              else "needs a control record"))
    if parsed.max_starts is not None and parsed.kind is Kind.reproduce:
        raise InvalidInput("malformed job: a reproduce job takes no max_starts")
    if parsed.control == parsed.target:
        raise InvalidInput("malformed job: its control is its target")
    return parsed


def _said(err: Any) -> str:
    """pydantic's message, without the input it quotes (the input may be anything)."""
    if err["type"] == "extra_forbidden":
        return "not an argument of a job"
    if err["type"] == "missing":
        return "missing"
    return str(err["msg"])[:120]


def malformed(task: str | None, args: object) -> str | None:
    """Why a queue row is not a job (None: it is one)."""
    try:
        parse_args(task, args)
    except InvalidInput as e:
        return e.message
    return None


def check_in_ledger(home: Home, job: JobArgs) -> None:
    """After the worker's pull: every record the job names is sealed and verifies in
    this home's ledger, and its claim, if any, is trusted and rests on its record (a
    claim moves only for a reproduction of the record it rests on). Raises NotFound or
    InvalidInput: no retry fixes either."""
    from registry.fleet.claimjobs import claim_record, is_claim
    from registry.store.query import sealed_statement

    for rid in filter(None, (job.target, job.control)):
        sealed_statement(home, rid)  # NotFound, or a refusal naming what does not verify
    if job.claim is None:
        return
    if not is_claim(home, job.claim):
        raise NotFound(f"claim {job.claim}: not in this home's ledger after its pull",
                       hint="registry claim list; queue a claim the team remote holds")
    from registry.claims.events import replay

    replayed = replay(home, job.claim)
    if not replayed.trusted:
        raise InvalidInput(f"claim {job.claim} is untrusted: {replayed.reason}")
    rests = claim_record(home, job.claim)
    if rests != job.target:
        raise InvalidInput(f"claim {job.claim} rests on record {short_id(rests)}, not on this "
                           f"{job.kind.value} of {short_id(job.target)}: the claim is not moved",
                           hint=f"registry queue add {job.claim}")
