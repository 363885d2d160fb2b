"""An A/B's result as a verification attestation: every start's record (and each side's
own record, when a record stood for it) as its subjects, the comparability, the quality
outcome and each suite's boost as its checks, the figures with their intervals.

A boost check is PASSED when the interval decided (faster, slower, no difference),
INCONCLUSIVE when it did not; the outcome check FAILED when A and B gave other outputs
without the quality class being named (then no boost is computed).
"""

from __future__ import annotations

from registry.ab.result import AbResult, SuiteBoost
from registry.formats.verification import Check, Figure, Result, VerificationStatement, attestation

POLICY_URI = "docs/measurement.md"


def ab_statement(done: AbResult, keyid: str) -> VerificationStatement:
    """The attestation of a finished A/B (`done.starts` set)."""
    records = {f"start-{s.start}-{s.side}": s.record for s in done.starts}
    records.update({f"side-{k}": rid for k, rid in done.records.items() if rid})
    c = done.comparability
    checks = [Check(name="comparability", result=Result.passed,
                    detail="; ".join(f"{d.field}: {d.a!r} vs {d.b!r} (named)"
                                     for d in c.differences) or "no axis differs")]
    if done.outcome is not None:
        differ = [d.field for d in done.outcome.differences]
        checks.append(Check(
            name="quality-outcome",
            result=Result.passed if done.outcome.comparable else Result.failed,
            detail="the same outputs" if not differ else
                   "outputs differ" + ("" if done.outcome.comparable else
                                       ": not named, no boost")))
    checks += [_boost(s, done.level) for s in done.suites]
    return attestation("ab", records, checks, uri=POLICY_URI, keyid=keyid, parameters={
        "deltas": list(c.deltas), "starts_per_side": done.starts_per_side,
        "order": list(done.order), "level": done.level, "noise_pct": done.noise_pct,
        "max_starts": done.max_starts, "look_level": done.look_level, "stopped": done.stopped,
        "a": done.a, "b": done.b}, note=f"verdict: {done.verdict}")


def _boost(s: SuiteBoost, level: float) -> Check:
    decided = s.verdict in ("faster", "slower", "no difference")
    iv = s.interval
    figures = [Figure(metric=f"{s.suite}/decode_tok_s.median.{side}", value=value,
                      unit="tok/s") for side, value in (("A", s.a), ("B", s.b))
               if value is not None]
    if s.boost_pct is not None:
        figures.append(Figure(metric=f"{s.suite}/boost_pct", value=s.boost_pct, low=s.low_pct,
                              high=s.high_pct, unit="%",
                              confidence=level if s.low_pct is not None else None))
    return Check(name=f"boost/{s.suite}",
                 result=Result.passed if decided else Result.inconclusive,
                 detail=f"{s.verdict}: {iv.method if iv else 'no paired figure'} ({s.formula})"
                        + (f"; {s.why.reason}" if s.why else ""),
                 figures=figures)
