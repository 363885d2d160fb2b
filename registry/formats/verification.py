"""A verification attestation: an in-toto Statement v1 whose predicate says who checked
which records, under which policy, when, with what result and by which checks.

Modelled on SLSA's Verification Summary Attestation (https://slsa.dev/spec/v1.0/
verification_summary): `verifier`, `time_verified`, the resources judged (the
statement's subjects: each a sealed record, its digest being the record id, which is
the sha256 of the record's canonical statement), `policy`, `result` (PASSED or FAILED,
as SLSA writes it) and, beyond the VSA, every `check` with its own result and the
`figures` it measured, so a claim can be confirmed or adjusted from the attestation
alone. `reproduce`, `review` and A/B comparisons write it; docs/claims.md documents it.
The attestation id is the sha256 of the canonical statement, as for records.
"""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import Field, ValidationError

from registry.base.canonical import canonical_bytes, sha256_hex
from registry.base.model import Frozen, empty_list
from registry.base.safeload import loads_json
from registry.errors import VerificationFailed
from registry.formats.record import STATEMENT_TYPE, Statement, Subject

PREDICATE_TYPE: Final = "https://registry.dev/verification/v1"
RECORD_PREFIX: Final = "record:"  # a subject's name: record:<role>, e.g. record:original


class Result(StrEnum):
    passed = "PASSED"
    failed = "FAILED"
    inconclusive = "INCONCLUSIVE"  # the check ran but could not decide (needs evidence)
    not_judged = "NOT JUDGED"  # nothing to judge (no rows, no fields, contract none)


class Verifier(Frozen):
    id: str = Field(description="the tool and command, e.g. registry/reproduce")
    version: dict[str, str] = Field(default_factory=dict, description="component -> version")
    key: str = Field(description="key id that signs the attestation")

    @classmethod
    def registry(cls, command: str, key: str) -> "Verifier":
        """This registry's `command` (reproduce, review, ab), signing with `key`."""
        from registry import __version__

        return cls(id=f"registry/{command}", version={"registry": __version__}, key=key)


class Policy(Frozen):
    name: str = Field(description="e.g. reproduce, review, ab")
    uri: str = Field(description="where the rules are written, e.g. docs/reproduce.md")
    parameters: dict[str, Any] = Field(default_factory=dict,
                                       description="the thresholds the check ran with")


class Figure(Frozen):
    """A figure a check measured: the value and, when known, its interval."""

    metric: str = Field(description="the metric, named as the records name it")
    value: float
    low: float | None = Field(None, description="lower bound of the interval")
    high: float | None = Field(None, description="upper bound of the interval")
    confidence: float | None = Field(None, description="e.g. 0.95")
    unit: str | None = None
    record: str | None = Field(None, description="the record it was measured on")


class Check(Frozen):
    name: str = Field(description="e.g. identity, contract, performance, figures")
    result: Result
    detail: str = ""
    figures: list[Figure] = Field(default_factory=empty_list)


class VerificationPredicate(Frozen):
    verifier: Verifier
    time_verified: str = Field(description="UTC ISO-8601")
    policy: Policy
    result: Result
    checks: list[Check]
    records: dict[str, str] = Field(description="role -> record id judged (the subjects)")
    note: str | None = None


class VerificationStatement(Frozen):
    type_: Literal["https://in-toto.io/Statement/v1"] = Field(STATEMENT_TYPE, alias="_type")
    subject: list[Subject]
    predicateType: Literal["https://registry.dev/verification/v1"] = PREDICATE_TYPE
    predicate: VerificationPredicate

    def judged(self) -> list[str]:
        """The record ids the attestation judged, from its signed subjects."""
        return [s.sha256 for s in self.subject if s.name.startswith(RECORD_PREFIX)]


def overall(checks: list[Check]) -> Result:
    """FAILED if any check failed, else INCONCLUSIVE if any could not decide, else PASSED
    if any check passed (the checks not judged stay NOT JUDGED in the list), else NOT
    JUDGED: nothing judged never passes."""
    results = {c.result for c in checks}
    for worst in (Result.failed, Result.inconclusive, Result.passed):
        if worst in results:
            return worst
    return Result.not_judged


def verification(records: dict[str, str], checks: list[Check], *, policy: Policy,
                 verifier: Verifier, note: str | None = None,
                 time: datetime | None = None) -> VerificationStatement:
    """The statement for `checks` run on `records` (role -> record id); the result is
    derived from the checks, never given."""
    if not records:
        raise ValueError("a verification judges at least one record")
    when = (time or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    subjects = [Subject(name=f"{RECORD_PREFIX}{role}", digest={"sha256": rid})
                for role, rid in sorted(records.items())]
    return VerificationStatement(subject=subjects, predicate=VerificationPredicate(
        verifier=verifier, time_verified=when, policy=policy, result=overall(checks),
        checks=checks, records=dict(records), note=note))


def attestation(kind: str, records: dict[str, str], checks: list[Check], *, uri: str,
                parameters: dict[str, Any], keyid: str,
                note: str | None = None) -> VerificationStatement:
    """The registry's own attestation of a `kind` of judgement (ab, reproduce, review): one
    builder, so the policy and the verifier are named the same way by each."""
    return verification(records, checks, note=note,
                        policy=Policy(name=kind, uri=uri, parameters=parameters),
                        verifier=Verifier.registry(kind, keyid))


def decode_figures(statement: Statement, record: str) -> list[Figure]:
    """A record's decode figures as sealed (re-derived at seal time), with their intervals."""
    return [Figure(metric=f"{s.suite}/{m.name}", value=m.value, low=m.ci_low, high=m.ci_high,
                   confidence=0.95 if m.ci_low is not None else None, unit=m.unit, record=record)
            for s in statement.predicate.results for m in s.metrics.values()
            if m.name.startswith("decode_tok_s")]


def verification_bytes(statement: VerificationStatement) -> bytes:
    return canonical_bytes(statement)


def verification_id(data: bytes) -> str:
    return sha256_hex(data)


def parse_verification(data: bytes) -> VerificationStatement:
    """The statement, refused when it is not a verification or contradicts itself (its
    result not what its checks give, its records not its subjects)."""
    try:
        parsed = VerificationStatement.model_validate(loads_json(data))
    except (ValueError, ValidationError) as e:
        first = str(e).splitlines()[0]
        raise VerificationFailed(f"not a verification attestation ({first})") from None
    p = parsed.predicate
    if p.result is not overall(p.checks):
        raise VerificationFailed(f"verification says {p.result.value} but its checks give "
                                 f"{overall(p.checks).value}")
    if sorted(p.records.values()) != sorted(parsed.judged()):
        raise VerificationFailed("verification: its records are not its subjects")
    return parsed
