"""Each promotion gate judged from a record's own evidence: its raw rows, its suite as
sent, its contract judged again, its signed verifications. A gate names the digests it
read and fails closed: evidence that is missing fails it, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen
from registry.contracts.sealed import SealedRun, carried
from registry.errors import RegistryError
from registry.formats.display import short_id
from registry.formats.identity import Status
from registry.formats.record import Statement
from registry.promote.finalgate import FinalGate, judge_final_gate
from registry.promote.policy import Gate, PromotionPolicy
from registry.store.home import Home
from registry.store.verifications import StoredVerification


class GateResult(Frozen):
    gate: Gate
    passed: bool
    detail: str
    evidence: dict[str, str] = Field(default_factory=dict,
                                     description="what it read -> sha256 (or record id)")


class Evidence(Frozen):
    """What every gate may read, gathered once."""

    id: str
    statement: Statement
    run: SealedRun
    policy: PromotionPolicy
    contract: str | None = Field(description="the record's contract, None when `none`")
    contract_status: str | None = Field(description="its verdict judged again on the rows")
    teacher: str | None = Field(None, description="the lane teacher's source, when judged")
    final: FinalGate
    verifications: list[StoredVerification]

    def bench(self) -> dict[str, str]:
        name = self.statement.predicate.artifacts.get("bench", "bench.json")
        subject = self.statement.subject_named(name)
        return {name: subject.sha256} if subject else {}


def judge(home: Home, gate: Gate, ev: Evidence) -> GateResult:
    if not ev.run.bench_intact:
        return GateResult(gate=gate, passed=False,
                          detail="bench.json no longer hashes to the digest the record signed")
    return JUDGES[gate](ev)


def _final(ev: Evidence) -> GateResult:
    f = ev.final
    detail = (f"{f.prompts} prompts in {len(f.classes)} classes; "
              + (f"headline {f.headline_tok_s:.2f} tok/s (median of per-class medians of "
                 f"99 / (t[99] - t[0]))" if f.headline_tok_s is not None else "no headline")
              + f"; {f.prefill_text}")
    if f.failures:
        detail = "breaches: " + ", ".join(f.failures) + "; " + detail
    suite = next((s for s in ev.run.bench.suites if s.name == f.suite), None)
    evidence = {**ev.bench(), **({f"suites/{f.suite}.jsonl": suite.sha256}
                                 if suite and suite.sha256 else {})}
    return GateResult(gate=Gate.final, passed=f.passed, detail=detail, evidence=evidence)


def _contract_passed(ev: Evidence, gate: Gate, kinds: tuple[str, ...] | None,
                     extra: Callable[[], str | None] = lambda: None) -> GateResult:
    if ev.contract is None:
        return GateResult(gate=gate, passed=False, detail="the record has no quality contract "
                                                          "(contract `none`): nothing judged")
    if kinds is not None and ev.contract not in kinds:
        return GateResult(gate=gate, passed=False,
                          detail=f"contract {ev.contract} is not {' or '.join(kinds)}")
    problem = extra()
    passed = ev.contract_status == "passed" and problem is None
    detail = f"{ev.contract}: {ev.contract_status} (judged again on the rows)"
    evidence = {**ev.bench(), **({"teacher": ev.teacher} if ev.teacher else {})}
    return GateResult(gate=gate, passed=passed,
                      detail=detail + (f"; {problem}" if problem else ""), evidence=evidence)


def _varied(ev: Evidence) -> GateResult:
    need = ev.policy.final_gate.min_classes
    have = len(ev.final.classes)
    return _contract_passed(ev, Gate.varied_task_quality, None, lambda: (
        None if have >= need else f"the suite covers {have} prompt classes, fewer than {need}"))


def _oracle(ev: Evidence) -> GateResult:
    return _contract_passed(ev, Gate.oracle, ("bitwise-teacher",))


def _no_loss(ev: Evidence) -> GateResult:
    return _contract_passed(ev, Gate.no_quality_loss, None)


def _repeats(ev: Evidence) -> GateResult:
    """Every prompt sent more than once (rounds or starts) gave the same token ids."""
    bench = ev.run.bench
    seen: dict[tuple[str, str], list[tuple[int, ...]]] = {}
    for row in (*bench.rows, *bench.more_rounds):
        if not row.error:
            seen.setdefault((row.suite, row.prompt_id), []).append(tuple(row.token_ids))
    repeated = {k: v for k, v in seen.items() if len(v) > 1}
    if not repeated:
        return GateResult(gate=Gate.deterministic_repeats, passed=False, evidence=ev.bench(),
                          detail="no prompt was sent twice in this record: no repeat to judge "
                                 "(run with more rounds or starts)")
    differ = sorted(f"{s}/{p}" for (s, p), v in repeated.items() if len(set(v)) > 1)
    detail = (f"{len(repeated)} prompts repeated, {len(differ)} gave other tokens"
              + (f" ({', '.join(differ[:4])})" if differ else ""))
    return GateResult(gate=Gate.deterministic_repeats, passed=not differ, detail=detail,
                      evidence=ev.bench())


def _fresh(ev: Evidence) -> GateResult:
    """A trusted reproduction on a fresh server that passed, naming this record."""
    passed = [v for v in ev.verifications
              if v.statement.predicate.policy.name == "reproduce"
              and v.statement.predicate.records.get("original") == ev.id
              and v.statement.predicate.result.value == "PASSED"]
    if not passed:
        seen = sum(1 for v in ev.verifications
                   if v.statement.predicate.policy.name == "reproduce")
        return GateResult(gate=Gate.fresh_server_repeat, passed=False,
                          detail=f"no passed reproduction of this record ({seen} reproduction "
                                 "verifications, none PASSED): `registry reproduce` it")
    v = passed[0]
    return GateResult(gate=Gate.fresh_server_repeat, passed=True,
                      detail=f"reproduction {short_id(v.id)} PASSED, signed by {v.signer}",
                      evidence={"verification": v.id})


def _model(ev: Evidence) -> GateResult:
    field = ev.statement.predicate.identity.fields.get("model.manifest_sha256")
    if field is None or field.status is Status.unresolved or not field.resolved:
        return GateResult(gate=Gate.target_model_unchanged, passed=False,
                          detail="the checkpoint's manifest digest is not proven by the record")
    if field.status is Status.mismatch:
        return GateResult(gate=Gate.target_model_unchanged, passed=False,
                          detail=f"the checkpoint's manifest {field.resolved} is not the "
                                 f"declared {field.declared}")
    return GateResult(gate=Gate.target_model_unchanged, passed=True,
                      detail=f"checkpoint manifest {field.resolved} ({field.status.value})",
                      evidence={"model.manifest": str(field.resolved)})


JUDGES: dict[Gate, Callable[[Evidence], GateResult]] = {
    Gate.final: _final,
    Gate.varied_task_quality: _varied,
    Gate.oracle: _oracle,
    Gate.deterministic_repeats: _repeats,
    Gate.fresh_server_repeat: _fresh,
    Gate.target_model_unchanged: _model,
    Gate.no_quality_loss: _no_loss,
}


def final_gate(home: Home, statement: Statement, run: SealedRun,
               policy: PromotionPolicy) -> FinalGate:
    """The final gate over the record's first suite, its classes
    taken from the suite file the record carries (`suites/<name>.jsonl`) over the
    policy's table of prompt ids."""
    from registry.executor.suite import parse_prompts

    if not run.bench.suites:
        return judge_final_gate(run.bench, policy.final_gate)
    name = f"suites/{run.bench.suites[0].name}.jsonl"
    data = carried(home, statement, name)
    try:
        prompts = parse_prompts(data, Path(name)) if data is not None else None
    except RegistryError:  # a carried suite that does not parse proves nothing
        prompts = None
    if prompts is None:
        return judge_final_gate(run.bench, policy.final_gate)
    return judge_final_gate(run.bench, policy.final_gate,
                            {p.id: p.prompt_class for p in prompts if p.prompt_class})
