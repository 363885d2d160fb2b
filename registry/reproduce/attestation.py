"""A reproduction's verdict as a verification attestation: the original and the new
record as its subjects, the three verdicts as its checks, the new run's decode figures
(with their intervals) as what it measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.formats.verification import (
    Check,
    Result,
    VerificationStatement,
    attestation,
    decode_figures,
)
from registry.reproduce.judge import NOT_JUDGED

if TYPE_CHECKING:
    from registry.formats.record import Statement
    from registry.reproduce import Reproduction
    from registry.reproduce.judge import PerformanceVerdict

POLICY_URI = "docs/reproduce.md"


def reproduction_statement(done: Reproduction, new: Statement, keyid: str
                           ) -> VerificationStatement:
    """The attestation of a judged reproduction (`done.record` set)."""
    assert done.record and done.identity and done.contract and done.performance
    i, c, p = done.identity, done.contract, done.performance
    identity = Check(name="identity", result=_result(i.passed, i.judged),
                     detail=f"{i.compared} fields compared"
                            + "".join(f"; {d.name}: {d.original!r} -> {d.new!r}"
                                      for d in i.differences)
                            + "".join(f"; {d.name} newly known: {d.new!r}"
                                      for d in i.newly_known))
    contract = Check(name="contract", result=_result(c.passed, c.judged),
                     detail=c.contract + "".join(
                         f"; {v.status.value} vs {v.reference}: {v.rows_passed}/{v.rows_total} "
                         "rows" for v in c.verdicts) + "".join(f"; {x}" for x in c.problems))
    performance = Check(name="performance", result=_performance(p),
                        detail="; ".join(f"{s.suite}: {s.status}: {s.detail}" for s in p.suites),
                        figures=decode_figures(new, done.record))
    return attestation("reproduce", {"original": done.original, "reproduction": done.record},
                       [identity, contract, performance], uri=POLICY_URI, keyid=keyid,
                       parameters={"min_performance": p.min_ratio, "max_rounds": p.max_rounds,
                                   "rounds": p.rounds,
                                   "environment_drift": list(done.environment.drift),
                                   **_controlled(done)})


def _controlled(done: Reproduction) -> dict[str, object]:
    """A controlled reproduction's plan and stop, and each start it kept out."""
    c = done.controlled
    if c is None:
        return {}
    return {"starts_per_side": len(c.starts) // 2, "max_starts": c.max_starts,
            "look_level": c.look_level, "stopped": c.stopped,
            "disturbed": sorted({f"{k}: {why}" for s in c.suites if s.why
                                 for k, why in s.why.disturbed.items()})}


def _result(passed: bool, judged: bool) -> Result:
    if not judged:  # nothing to judge is signed as such, never PASSED
        return Result.not_judged
    return Result.passed if passed else Result.failed


def _performance(p: PerformanceVerdict) -> Result:
    if p.passed:
        return Result.passed
    if p.status == NOT_JUDGED:
        return Result.not_judged
    return Result.failed if p.status == "failed" else Result.inconclusive

