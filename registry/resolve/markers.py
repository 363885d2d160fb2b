"""`[[expect]]` markers: a recipe's runtime markers, counted per rank in the engine log.

A flag is not proof that code ran. Each marker must appear `count` times (at least,
with `at_least`) on each of the expected ranks (default: the world size), and each
named group must show only its expected value. Seen on 1 of 4 ranks is a failure.
"""

from __future__ import annotations

from registry.formats.identity import Evidence, ExpectResult
from registry.logs import MarkerScan
from registry.recipe.schema import Expect


def expect_results(expects: list[Expect], scans: list[MarkerScan], world_size: int,
                   source: str) -> list[ExpectResult]:
    by_name = {scan.name: scan for scan in scans}
    return [_result(e, by_name[e.name], world_size, source) for e in expects
            if e.name in by_name]


def _result(expect: Expect, scan: MarkerScan, world_size: int, source: str) -> ExpectResult:
    ranks = (expect.ranks or world_size) if expect.per_rank else 1
    counts = scan.counts if expect.per_rank else {"all": sum(scan.counts.values())}
    problems = _count_problems(expect, counts, ranks) + _value_problems(expect, scan)
    return ExpectResult(
        name=expect.name, pattern=expect.pattern, expected_count=expect.count,
        at_least=expect.at_least, ranks_expected=ranks, counts=counts, values=scan.values,
        expected_values=expect.values, passed=not problems,
        detail="; ".join(problems) or _success(expect, ranks),
        evidence=[Evidence(source=source, line=f.line, text=f"({f.proc}) {f.text}")
                  for f in scan.first],
    )


def _count_problems(expect: Expect, counts: dict[str, int], ranks: int) -> list[str]:
    if expect.count == 0:
        return [f"expected no match, saw {sum(counts.values())}"] if any(counts.values()) else []
    seen = {label: n for label, n in counts.items() if n}
    problems = []
    if len(seen) != ranks:
        problems.append(f"seen on {len(seen)} of {ranks} rank(s)"
                        + (f" ({_counts_text(seen)})" if seen else ""))
    wrong = {label: n for label, n in seen.items()
             if (n < expect.count if expect.at_least else n != expect.count)}
    if wrong:
        need = f"at least {expect.count}" if expect.at_least else f"exactly {expect.count}"
        problems.append(f"expected {need} per rank, saw {_counts_text(wrong)}")
    return problems


def _value_problems(expect: Expect, scan: MarkerScan) -> list[str]:
    problems = []
    for group, want in expect.values.items():
        seen = scan.values.get(group, [])
        if seen and seen != [want]:
            problems.append(f"{group}: expected {want}, saw {', '.join(seen)}")
    return problems


def _success(expect: Expect, ranks: int) -> str:
    times = f"{'at least ' if expect.at_least else ''}{expect.count}x"
    values = "".join(f", {g}={v}" for g, v in expect.values.items())
    where = f"on each of {ranks} rank(s)" if expect.per_rank else "in total"
    return f"{times} {where}{values}"


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{label}: {n}" for label, n in sorted(counts.items()))
