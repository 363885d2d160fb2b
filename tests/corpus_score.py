"""Scoring `registry resolve` over a corpus of real logs against its truth.json: one loop
for every corpus test (each brings its own verdict rule and how a case is resolved)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# (case) -> the CLI result of resolving it; (field, truth, resolved) -> right/unresolved/WRONG
Resolve = Callable[[dict[str, Any]], Any]
Verdict = Callable[[str, Any, Any], str]


@dataclass
class Score:
    totals: dict[str, int] = field(default_factory=lambda: {
        "right": 0, "unresolved": 0, "WRONG": 0, "crash": 0})
    values: int = 0  # knowable values (an `absent` truth met by silence does not count)
    values_right: int = 0
    wrong: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)  # every verdict but right, for -s


def score_cases(cases: list[dict[str, Any]], resolve: Resolve, verdict: Verdict,
                cut: int = 200) -> Score:
    s = Score()
    for case in cases:
        known = {f: v for f, v in case["truth"].items() if v != "unknown"}
        result = resolve(case)
        if result.exit_code != 0:
            s.totals["crash"] += len(known)
            s.wrong.append(f"{case['case']}: exit {result.exit_code}: {result.stderr[:cut]}")
            continue
        fields = json.loads(result.stdout)["fields"]
        for name, truth in known.items():
            got = (fields.get(name) or {}).get("resolved")
            v = verdict(name, truth, got)
            s.totals[v] += 1
            if truth != "absent":
                s.values += 1
                s.values_right += v == "right"
            if v != "right":
                s.misses.append(f"{case['case']} {name}: {v} (truth {truth!r}, resolved {got!r})")
            if v == "WRONG":
                s.wrong.append(f"{case['case']} {name}: truth {truth!r}, resolved {got!r}")
    return s
