"""`registry promote RECORD`: a record judged against a promotion policy, every gate
from the record's own evidence, into one signed verification attestation (policy
`promotion`, one check per gate, the digests each gate read as extra subjects).

A record that does not verify is refused before any gate; a gate without its evidence
fails (fail closed); the promotion passes only when every gate does. A lab's own
`promotion-attestation.json` is judged by registry/promote/labattestation.py.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.formats.display import short_id
from registry.formats.record import Statement
from registry.formats.verification import Result, VerificationStatement
from registry.promote.finalgate import FinalGate
from registry.promote.gates import Evidence, GateResult
from registry.promote.policy import PromotionPolicy
from registry.recipe.schema import Recipe
from registry.store.home import Home

POLICY_NAME = "promotion"
EVIDENCE_PREFIX = "evidence:"  # a subject's name: evidence:<gate>/<what it read>


class Promotion(Frozen):
    id: str
    policy: str
    promoted: bool
    gates: list[GateResult] = Field(default_factory=empty_list)
    final_gate: FinalGate
    verification: str | None = Field(None, description="the signed attestation, when sealed")
    not_sealed: str | None = Field(None, description="why it was not sealed")


def promote_record(home: Home, prefix: str, policy_path: Path | None = None, *,
                   seal: bool = True) -> Promotion:
    """Judge record `prefix` under the policy at `policy_path` (default: the shipped
    lab policy); with `seal`, sign the result as a verification (when this home's key
    may sign, else `not_sealed` says why)."""
    from registry.errors import VerificationFailed
    from registry.formats.record import parse_statement
    from registry.promote.gates import judge
    from registry.promote.policy import load_policy
    from registry.store.query import checked_statement

    policy = load_policy(policy_path)
    rid, check, data = checked_statement(home, prefix)
    if not check.ok:
        raise VerificationFailed(f"record {short_id(rid)} does not verify ({check.trust.value}: "
                                 f"{check.detail}): nothing to promote")
    evidence = _evidence(home, rid, parse_statement(data), policy)
    results = [judge(home, gate, evidence) for gate in policy.gates]
    promotion = Promotion(id=rid, policy=policy.name, promoted=all(r.passed for r in results),
                          gates=results, final_gate=evidence.final)
    return _sealed(home, promotion, policy) if seal else promotion


def _evidence(home: Home, rid: str, statement: Statement,
              policy: PromotionPolicy) -> Evidence:
    from registry.contracts.sealed import sealed_run
    from registry.promote.gates import final_gate
    from registry.store.verifications import verifications_of

    run = sealed_run(home, rid, statement)
    contract, status, teacher = _contract(home, rid, run.recipe)
    return Evidence(id=rid, statement=statement, run=run, policy=policy, contract=contract,
                    contract_status=status, teacher=teacher,
                    final=final_gate(home, statement, run, policy),
                    verifications=verifications_of(home, rid))


def _contract(home: Home, rid: str, recipe: Recipe | None
              ) -> tuple[str | None, str | None, str | None]:
    """(the record's contract, its verdict judged again on the rows, the teacher's
    source when the contract has one); (None, None, None) for contract `none`."""
    from registry.contracts import teacher_lane
    from registry.contracts.bindings import get_teacher
    from registry.contracts.check import check_record
    from registry.errors import RegistryError

    if recipe is None or recipe.quality.contract.value == "none":
        return None, None, None
    name = recipe.quality.contract.value
    try:
        result = check_record(home, rid)
    except RegistryError as e:
        return name, f"not judged ({e.message})", None
    status = "failed" if result.problems else (
        result.verdict.status.value if result.verdict else "not judged")
    teacher = get_teacher(home, teacher_lane(recipe)) if name == "bitwise-teacher" else None
    return name, status, (f"{teacher.source.kind}:{teacher.source.ref}" if teacher else None)


def promotion_statement(promotion: Promotion, policy: PromotionPolicy, keyid: str
                        ) -> VerificationStatement:
    """The attestation: one check per gate (PASSED or FAILED: a gate never stays
    undecided), each gate's evidence digests as subjects of their own."""
    from registry.formats.record import Subject
    from registry.formats.verification import Check, Policy, Verifier, verification

    checks = [Check(name=g.gate.value, result=Result.passed if g.passed else Result.failed,
                    detail=g.detail) for g in promotion.gates]
    statement = verification(
        {"promoted": promotion.id}, checks,
        policy=Policy(name=POLICY_NAME, uri=policy.uri,
                      parameters={"policy": policy.name,
                                  "final_gate": policy.final_gate.model_dump(
                                      exclude={"classes"})}),
        verifier=Verifier.registry("promote", keyid))
    extra = [Subject(name=f"{EVIDENCE_PREFIX}{g.gate.value}/{what}", digest={"sha256": digest})
             for g in promotion.gates for what, digest in sorted(g.evidence.items())
             if _is_digest(digest)]
    return statement.model_copy(update={"subject": [*statement.subject, *extra]})


def _is_digest(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _sealed(home: Home, promotion: Promotion, policy: PromotionPolicy) -> Promotion:
    from registry.store.verifications import seal_if_signer

    sealed, why = seal_if_signer(
        home, lambda keyid: promotion_statement(promotion, policy, keyid))
    return promotion.model_copy(update={"verification": sealed, "not_sealed": why})
