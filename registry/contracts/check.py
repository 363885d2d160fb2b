"""`registry check`: re-derive a sealed record's quality verdict from its raw rows.

The verdict the record stored is shown beside the new one and never used: a record
whose rows were edited fails here whatever its stored summary says. Rows that no
longer hash to the digest the record signed fail too, and say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from registry.contracts.verdict import Verdict, VerdictStatus
from registry.errors import ExitCode, InvalidInput
from registry.recipe.schema import ContractName
from registry.store.home import Home


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    record: str
    contract: str
    verdict: Verdict | None  # None for contract `none`
    problems: list[str]  # integrity problems with the rows judged
    stored_verdict: dict[str, Any] | None  # what the record claims: shown, never trusted
    exit_code: int


def check_record(home: Home, prefix: str, *, contract: str | None = None,
                 against: Sequence[str] = ()) -> CheckResult:
    """The verdict of `contract` (default: the record's recipe's) on record `prefix`;
    `against` names the other runs a self-consistency verdict compares."""
    from registry.contracts import evaluate, teacher_lane
    from registry.contracts.bindings import get_teacher
    from registry.contracts.sealed import load_sealed

    run = load_sealed(home, prefix)
    if run.recipe is None:
        raise InvalidInput(f"record {run.id[:16]} carries no recipe: its contract is unknown",
                           hint="records sealed with a recipe name their contract")
    others = [load_sealed(home, other) for other in against]
    problems = [f"record {r.id[:16]}: bench.json no longer matches the digest the record "
                "signed: its rows were changed after sealing"
                for r in (run, *others) if not r.bench_intact]
    name = contract or run.recipe.quality.contract.value
    teacher = (get_teacher(home, teacher_lane(run.recipe))
               if name == ContractName.bitwise_teacher else None)
    verdict = evaluate(run.recipe, run.bench.rows, run.identity, teacher,
                       others=[o.bench.rows for o in others], suites=run.bench.suites,
                       contract=name)
    return CheckResult(record=run.id, contract=name, verdict=verdict, problems=problems,
                       stored_verdict=run.stored_verdict, exit_code=_exit(verdict, problems))


def _exit(verdict: Verdict | None, problems: list[str]) -> int:
    if problems or (verdict and verdict.status is VerdictStatus.failed):
        return ExitCode.FAILED
    if verdict and verdict.status is VerdictStatus.refused:
        return ExitCode.REFUSED
    return ExitCode.OK
