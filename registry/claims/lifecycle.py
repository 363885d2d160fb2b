"""The claim lifecycle as a state machine: which moves exist, and what evidence each
needs. Pure: a verification and the record it judged in, a decision or a refusal out.

- `queued`, `reproducing`: bookkeeping; no evidence.
- `confirmed`, `lab-verified`: a PASSED verification judging a record whose identity
  matches the claim on every confirmation axis (registry/claims/match.py), and whose
  measured figure's interval contains the claimed figure. `lab-verified` only for the
  lab's own claims.
- `confirmed-adjusted`: the same, but the interval excludes the claimed figure (the
  claim is real; the verified figure is the one to cite).
- `refuted`: a FAILED reproduction of a record matching the claim on what ran (model,
  quantization, runtime, topology). Final: a refuted claim stays refuted; a new claim
  is a new id.
- `stale`: from a confirmed state, naming what moved (axis -> what it is now).
"""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.claims.match import AXES, AxisMatch, confirms, match
from registry.claims.models import ClaimBody, State
from registry.errors import Refused
from registry.formats.display import short_id
from registry.formats.record import Statement
from registry.formats.verification import Figure, Result, VerificationStatement

S = State
MOVES: dict[State, frozenset[State]] = {
    S.submitted: frozenset({S.queued, S.reproducing, S.confirmed, S.confirmed_adjusted,
                            S.refuted, S.lab_verified}),
    S.queued: frozenset({S.reproducing, S.confirmed, S.confirmed_adjusted, S.refuted,
                         S.lab_verified}),
    S.reproducing: frozenset({S.queued, S.confirmed, S.confirmed_adjusted, S.refuted,
                              S.lab_verified}),
    S.confirmed: frozenset({S.stale, S.refuted}),
    S.confirmed_adjusted: frozenset({S.stale, S.refuted}),
    S.lab_verified: frozenset({S.stale, S.refuted}),
    S.stale: frozenset({S.queued}),
    S.refuted: frozenset(),
}
VERIFIED = frozenset({S.confirmed, S.confirmed_adjusted, S.lab_verified})
WHAT_RAN = ("model", "quantization", "runtime", "topology")


class Evidence(Frozen):
    """A verification and one record it judged, as the home read them (both trusted)."""

    verification_id: str
    verification: VerificationStatement
    record_id: str
    record: Statement


class Decision(Frozen):
    state: State
    axes: list[AxisMatch] = Field(default_factory=list)
    figure: Figure | None = None
    reason: str


def decide(current: State, target: State, claim: ClaimBody, evidence: Evidence | None,
           moved: dict[str, str]) -> Decision:
    """The move `current` -> `target`, or Refused saying what is missing."""
    if target not in MOVES[current]:
        allowed = ", ".join(sorted(MOVES[current])) or "none: it is final"
        raise Refused(f"claim {claim.id}: no move from {current.value} to {target.value} "
                      f"(from {current.value}: {allowed})",
                      hint="a refuted claim stays refuted; register a new claim for new work"
                      if current is S.refuted else None)
    if target in (S.queued, S.reproducing):
        return Decision(state=target, reason="bookkeeping")
    if target is S.stale:
        return _stale(claim, moved)
    if evidence is None:
        raise Refused(f"claim {claim.id}: {target.value} needs a verification",
                      hint="--verification ID (registry show RECORD lists them)")
    if target is S.refuted:
        return _refuted(claim, evidence)
    return _verified(claim, target, evidence)


def _stale(claim: ClaimBody, moved: dict[str, str]) -> Decision:
    if not moved:
        raise Refused(f"claim {claim.id}: stale must name what moved",
                      hint="--moved AXIS=NOW, e.g. --moved runtime=vllm-0.33")
    unknown = sorted(set(moved) - set(AXES))
    if unknown:
        raise Refused(f"claim {claim.id}: {unknown[0]} is not a confirmation axis "
                      f"({', '.join(AXES)})")
    return Decision(state=S.stale, reason="moved: " + ", ".join(
        f"{k} -> {v}" for k, v in sorted(moved.items())))


# the checks whose failure shows a claim wrong; identity only says the record moved
REFUTING = {"contract", "performance"}


def _refuted(claim: ClaimBody, e: Evidence) -> Decision:
    p = e.verification.predicate
    if p.policy.name != "reproduce" or p.result is not Result.failed:
        raise Refused(f"claim {claim.id}: refuted needs a failed reproduction; verification "
                      f"{short_id(e.verification_id)} is {p.policy.name} {p.result.value}")
    axes = [a for a in match(claim.identity, claim.claimed.metric, e.record,
                             contract_passed=None) if a.axis in WHAT_RAN]
    _require(claim, "refuted", axes, e.record_id)
    failed = [c.name for c in p.checks if c.result is Result.failed]
    if not set(failed) & REFUTING:  # the record moved; the claim was not shown wrong
        raise Refused(f"claim {claim.id}: refuted needs a failed contract or performance "
                      f"check; verification {short_id(e.verification_id)} failed only "
                      f"{', '.join(failed) or 'no check'} (an identity drift)",
                      hint="the claim is stale: advance it --to stale --moved AXIS=NOW, or "
                           "reproduce on the claim's identity")
    return Decision(state=S.refuted, axes=axes,
                    reason=f"reproduction {short_id(e.verification_id)} failed: "
                           f"{', '.join(failed)}")


def _verified(claim: ClaimBody, target: State, e: Evidence) -> Decision:
    p = e.verification.predicate
    if p.result is not Result.passed:
        raise Refused(f"claim {claim.id}: {target.value} needs a PASSED verification; "
                      f"{short_id(e.verification_id)} is {p.result.value}")
    if target is S.lab_verified and claim.claimed.by != "lab":
        raise Refused(f"claim {claim.id}: lab-verified is for the lab's own claims "
                      f"(claimed by {claim.claimed.by}); use confirmed")
    gate = {c.name: c.result for c in p.checks}.get("contract")
    axes = match(claim.identity, claim.claimed.metric, e.record,
                 contract_passed=None if gate is None else gate is Result.passed)
    _require(claim, target.value, axes, e.record_id)
    figure = _figure(claim, e)
    if figure.low is None or figure.high is None:
        raise Refused(f"claim {claim.id}: the verified figure {figure.metric} has no interval "
                      "to judge the claimed figure against")
    inside = figure.low <= claim.claimed.value <= figure.high
    right = S.confirmed_adjusted if not inside else (
        S.lab_verified if target is S.lab_verified else S.confirmed)
    if right is not target:
        raise Refused(f"claim {claim.id}: the verified interval [{figure.low:.6g}, "
                      f"{figure.high:.6g}] {'contains' if inside else 'excludes'} the claimed "
                      f"{claim.claimed.value:g}: the move is {right.value}, not {target.value}")
    return Decision(state=target, axes=axes, figure=figure,
                    reason=f"{figure.metric} {figure.value:.6g} [{figure.low:.6g}, "
                           f"{figure.high:.6g}] on record {short_id(e.record_id)}")


def _require(claim: ClaimBody, what: str, axes: list[AxisMatch], rid: str) -> None:
    if not confirms(axes):
        bad = [a for a in axes if a.outcome != "same"]
        shown = "; ".join(f"{a.axis}: claim {a.claimed!r}, record {a.record!r} ({a.outcome}: "
                          f"{a.rule})" for a in bad)
        raise Refused(f"claim {claim.id}: {what} needs record {short_id(rid)} to match the "
                      "claim on "
                      f"every confirmation axis; {shown}")


def _figure(claim: ClaimBody, e: Evidence) -> Figure:
    """The measured figure of the claim's aggregation (median unless the metric names
    another) on the matched record."""
    figures = [f for c in e.verification.predicate.checks for f in c.figures
               if f.record in (None, e.record_id)]
    want = {"mean": ".mean"}.get(claim.claimed.metric.aggregation or "", ".median")
    formula = claim.claimed.metric.formula
    names = _metrics_of(e.record, formula)
    found = next((f for f in figures if f.metric.endswith(want)
                  and (names is None or f.metric.rsplit("/", 1)[-1] in names)), None)
    if found is None:
        of = f" of formula {formula}" if formula else ""
        raise Refused(f"claim {claim.id}: verification {short_id(e.verification_id)} measured no "
                      f"figure ending {want}{of} on record {short_id(e.record_id)}")
    return found


def _metrics_of(record: Statement, formula: str | None) -> set[str] | None:
    """The record's metric names computed by the formula the claim's words name (None:
    they name none, so any decode figure judges it): a claim stated in the lab's
    100-token formula is judged on that figure, never on the registry's 99-interval one."""
    if formula is None:
        return None
    return {m.name for s in record.predicate.results for m in s.metrics.values()
            if m.formula.endswith(f" of {formula}")}  # "median over unflagged rows of ..."
