"""`registry check`: re-derive a sealed record's quality verdict from its raw rows.

The verdict the record stored is shown beside the new one and never used: a record
whose rows were edited fails here whatever its stored summary says. Rows that no
longer hash to the digest the record signed fail too, and say so.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.formats.display import short_id
from registry.formats.identity import ResolvedIdentity
from registry.formats.rundir import Bench, BenchRow
from registry.formats.verdict import Verdict
from registry.recipe.schema import ContractName, Recipe
from registry.store.home import Home


class CheckResult(Frozen):
    record: str
    contract: str
    verdict: Verdict | None  # None for contract `none`
    problems: list[str]  # integrity problems with the rows judged
    stored_verdict: Verdict | None  # what the record claims: shown, never trusted


def check_record(home: Home, prefix: str, *, contract: str | None = None,
                 against: Sequence[str] = ()) -> CheckResult:
    """The verdict of `contract` (default: the record's recipe's) on record `prefix`;
    `against` names the other runs a self-consistency verdict compares."""
    from registry.contracts.sealed import load_sealed

    run = load_sealed(home, prefix)
    if run.recipe is None:
        raise InvalidInput(f"record {short_id(run.id)} carries no recipe: its contract is unknown",
                           hint="records sealed with a recipe name their contract")
    others = [load_sealed(home, other) for other in against]
    problems = [f"record {short_id(r.id)}: bench.json no longer matches the digest the record "
                "signed: its rows were changed after sealing"
                for r in (run, *others) if not r.bench_intact]
    name = contract or run.recipe.quality.contract.value
    verdict = judge(home, run.recipe, run.bench, run.identity, contract=name,
                    others=[o.bench.rows for o in others])
    return CheckResult(record=run.id, contract=name, verdict=verdict, problems=problems,
                       stored_verdict=run.stored_verdict)


def judge(home: Home, recipe: Recipe, bench: Bench, identity: ResolvedIdentity, *,
          contract: str | None = None,
          others: Sequence[Sequence[BenchRow]] = ()) -> Verdict | None:
    """A run's verdict with the home's teacher for its lane (what `seal` stores)."""
    from registry.contracts import evaluate, teacher_lane
    from registry.contracts.bindings import get_teacher

    name = contract or recipe.quality.contract.value
    teacher = (get_teacher(home, teacher_lane(recipe))
               if name == ContractName.bitwise_teacher else None)
    return evaluate(recipe, bench.rows, identity, teacher, others=others, suites=bench.suites,
                    contract=name)

