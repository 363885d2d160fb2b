"""Which failures of a job a retry may fix: a transient one (an object or the network was
missing for a moment; the engine crashed or timed out, where the host policy opts in to
retrying engine faults: by default it does not, registry/fleet/policy.py) is run again,
up to MAX_ATTEMPTS runs; a hopeless one (an unknown record or claim, a recipe or input
refused, a host that does not match the record, sides that cannot be compared) fails the
job at once, since every retry would meet the same refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.errors import (
    EngineFailed,
    InvalidInput,
    NotFound,
    Refused,
    RegistryError,
    Unverifiable,
    UsageError,
    VerificationFailed,
)

if TYPE_CHECKING:
    from procrastinate.jobs import Job
    from procrastinate.retry import BaseRetryStrategy, RetryDecision

HOPELESS: tuple[type[RegistryError], ...] = (NotFound, InvalidInput, Refused, UsageError,
                                             VerificationFailed)
"""Refusals a retry meets again: the record, claim, recipe and host are the same."""


class Hopeless(RegistryError):
    """A job failed for a reason no retry can fix: procrastinate fails it at once."""


def is_hopeless(error: BaseException) -> bool:
    """Whether `error` would come back on every retry. Engine failures and
    unverifiable objects (a pull may bring them) are transient; so is any error that is
    not the registry's own (a dropped connection, a full disk)."""
    if isinstance(error, EngineFailed | Unverifiable):
        return False
    return isinstance(error, HOPELESS)


def retries(max_runs: int) -> BaseRetryStrategy:
    """procrastinate's retry strategy for `max_runs` runs of a job (it counts retries),
    except that a `Hopeless` job is never retried."""
    from procrastinate import RetryStrategy

    class Retries(RetryStrategy):
        def get_retry_decision(self, *, exception: BaseException, job: Job
                               ) -> RetryDecision | None:
            if isinstance(exception, Hopeless):
                return None
            return super().get_retry_decision(exception=exception, job=job)

    return Retries(max_attempts=max_runs - 1)
