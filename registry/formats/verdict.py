"""What a contract returns: a status, the reasons for it, per-row detail and the
aggregate checks, all derived from raw rows by the contract that built it.

A stored verdict is a report, never an input: `registry check` builds a new one.
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from registry.base.model import Frozen, empty_list


class VerdictStatus(StrEnum):
    passed = "passed"
    failed = "failed"  # the outputs break the contract
    refused = "refused"  # the contract cannot judge this run (other precision, no teacher, ...)


class FirstDiff(Frozen):
    """The first output position where two token id lists part."""

    index: int = Field(description="0-based output token position")
    expected: int | None = Field(description="reference token id; None past its end")
    actual: int | None = Field(description="this run's token id; None past its end")


class Check(Frozen):
    """One aggregate check over all rows (e.g. the longest prompt row is exact)."""

    name: str
    passed: bool
    detail: str


class RowVerdict(Frozen):
    """One prompt (under one gate, or in one repeat) and the checks it passed."""

    index: int
    prompt_id: str
    gate: str | None = Field(None, description="semantic-gates: the gate judged")
    repeat: int | None = Field(None, description="self-consistency: the row set compared")
    passed: bool
    checks: dict[str, bool] = Field(description="check name -> passed")
    first_diff: FirstDiff | None = None
    detail: str | None = Field(None, description="why it failed, in words")


class Verdict(Frozen):
    schema_: str = Field("registry.verdict/v1", alias="schema")
    contract: str
    status: VerdictStatus
    reasons: list[str] = Field(description="why this status; empty when passed")
    rows: list[RowVerdict] = Field(default_factory=empty_list)
    checks: list[Check] = Field(default_factory=empty_list)
    rows_passed: int = 0
    rows_total: int = 0
    reference: str | None = Field(None, description="what the rows were judged against")


def judged(contract: str, rows: list[RowVerdict], checks: list[Check],
           reference: str | None = None) -> Verdict:
    """Passed when every row and every aggregate check passed; else failed, with reasons."""
    reasons = [f"row {r.index} ({r.prompt_id}){_label(r)}: {r.detail}"
               for r in rows if not r.passed]
    reasons += [f"{c.name}: {c.detail}" for c in checks if not c.passed]
    return Verdict(
        contract=contract,
        status=VerdictStatus.failed if reasons else VerdictStatus.passed,
        reasons=reasons, rows=rows, checks=checks, reference=reference,
        rows_passed=sum(r.passed for r in rows), rows_total=len(rows),
    )


def row_verdict(index: int, prompt_id: str, checks: dict[str, tuple[bool, str]],
                **extra: Any) -> RowVerdict:
    """A row from named checks, each `(passed, what is wrong if not)`."""
    failed = [problem for ok, problem in checks.values() if not ok]
    return RowVerdict(index=index, prompt_id=prompt_id, passed=not failed,
                      checks={name: ok for name, (ok, _) in checks.items()},
                      detail="; ".join(failed) or None, **extra)


def refused(contract: str, reasons: list[str], reference: str | None = None) -> Verdict:
    return Verdict(contract=contract, status=VerdictStatus.refused, reasons=reasons,
                   reference=reference)


def first_diff(expected: list[int], actual: list[int]) -> FirstDiff | None:
    """None when equal; else the first position that differs (or where one list ends)."""
    if expected == actual:
        return None
    for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
        if e != a:
            return FirstDiff(index=i, expected=e, actual=a)
    if len(expected) == len(actual):
        return None
    n = min(len(expected), len(actual))
    return FirstDiff(index=n, expected=_at(expected, n), actual=_at(actual, n))


def describe(diff: FirstDiff) -> str:
    return (f"token ids differ at output index {diff.index}: "
            f"expected {diff.expected}, actual {diff.actual}")


def _at(ids: list[int], i: int) -> int | None:
    return ids[i] if i < len(ids) else None


def _label(row: RowVerdict) -> str:
    if row.gate:
        return f" [{row.gate}]"
    return f" [repeat {row.repeat}]" if row.repeat is not None else ""
