"""Quality contracts: how a run's outputs are judged, always from its raw rows.

Each contract is one function from raw rows to a `Verdict`; `CONTRACTS` is the
explicit table from a recipe's `[quality] contract` name to that function, and
`evaluate` is the one call seal, check and reproduce make.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from registry.contracts.bitwise import bitwise_teacher
from registry.contracts.consistency import self_consistency
from registry.contracts.semantic import Gate, semantic_gates
from registry.contracts.teacher import Axes, Teacher, binding_axes, kernel_axes
from registry.errors import InvalidInput
from registry.formats.identity import ResolvedIdentity
from registry.formats.rundir import BenchRow, SuiteRef
from registry.formats.verdict import Verdict, VerdictStatus
from registry.recipe.schema import ContractName, Recipe


@dataclass(frozen=True)
class ContractInput:
    """Everything any contract may look at: raw rows and the facts that bind them."""

    rows: Sequence[BenchRow]
    run_axes: Axes
    teacher: Teacher | None = None
    others: Sequence[Sequence[BenchRow]] = ()  # self-consistency: rows of other fresh runs
    gates: Sequence[Gate] = ()
    repeats: int = 2
    max_tokens: int | None = None
    teacher_rows: Sequence[BenchRow] = ()  # bitwise-teacher: rows of the suite it answered
    run_kernel: Axes | None = None  # bitwise-teacher: the kernel the rows came from


CONTRACTS: dict[str, Callable[[ContractInput], Verdict]] = {
    ContractName.bitwise_teacher: lambda i: bitwise_teacher(
        i.teacher_rows, i.teacher, i.run_axes, max_tokens=i.max_tokens,
        run_kernel=i.run_kernel),
    ContractName.self_consistency: lambda i: self_consistency(
        [i.rows, *i.others], repeats=i.repeats),
    ContractName.semantic_gates: lambda i: semantic_gates(i.rows, i.gates),
}


def teacher_lane(recipe: Recipe) -> str:
    """The lane whose teacher judges this recipe's runs."""
    return recipe.quality.teacher or recipe.lane


def evaluate(recipe: Recipe, rows: Sequence[BenchRow], identity: ResolvedIdentity,
             teacher: Teacher | None, *, others: Sequence[Sequence[BenchRow]] = (),
             suites: Sequence[SuiteRef] = (), contract: str | None = None) -> Verdict | None:
    """The verdict of `contract` (default: the recipe's) on a run's rows; None for `none`.

    `suites` are the bench's suite digests (what was sent); the recipe's pins otherwise.
    """
    name = contract or recipe.quality.contract
    if name == ContractName.none:
        return None
    if name not in CONTRACTS:
        raise InvalidInput(f"unknown contract {name!r}",
                           hint=f"contracts: {', '.join(sorted(CONTRACTS))}")
    digests = {s.name: s.sha256 for s in suites} or {s.name: s.sha256
                                                    for s in recipe.benchmark.suites}
    suite = _compared_suite(digests, teacher)
    spec = next((s for s in recipe.benchmark.suites if s.name == suite), None)
    return CONTRACTS[name](ContractInput(
        rows=rows, run_axes=binding_axes(identity, digests.get(suite) if suite else None),
        teacher=teacher, others=others, gates=recipe.quality.gates,
        repeats=recipe.quality.repeats,
        max_tokens=(spec and spec.max_tokens) or recipe.benchmark.max_tokens,
        teacher_rows=[r for r in rows if r.suite == suite],
        run_kernel=kernel_axes(identity),
    ))


def _compared_suite(digests: dict[str, str | None], teacher: Teacher | None) -> str | None:
    """The suite a teacher answered (by digest), else the run's only suite."""
    if teacher is not None:
        for name, sha256 in digests.items():
            if sha256 is not None and sha256 == teacher.suite_sha256:
                return name
    return next(iter(digests)) if len(digests) == 1 else None


__all__ = ["CONTRACTS", "ContractInput", "Teacher", "Verdict", "VerdictStatus", "evaluate",
           "teacher_lane"]
