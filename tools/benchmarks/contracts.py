#!/usr/bin/env python3
"""Contracts: what re-deriving a verdict from raw rows costs, against the bare work.

- bitwise-teacher on the lab's real 13-row record vs a bare loop that compares the
  same token id lists and text digests (the verdict adds typed per-row detail);
- the repetition detector on a 65,536-token answer vs `Counter` over the same
  n-grams (the floor for counting them);
- importing the lab's two oracle files vs `json.loads` of the same bytes.
"""

from __future__ import annotations

import json
import random
import sys
import timeit
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from registry.contracts.bitwise import bitwise_teacher  # noqa: E402
from registry.contracts.semantic import most_repeated_ngram  # noqa: E402
from registry.contracts.teacher import teacher_from_lab_oracles  # noqa: E402
from tests.test_teacher import LAB_AXES, LANE, TEXT_ORACLE, TOKEN_ORACLE, capsule_rows  # noqa: E402


def best(fn: Callable[[], object], repeat: int = 20) -> float:
    """Best wall time of `repeat` calls (the least disturbed by the shared machine)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def run() -> list[tuple[str, float, str]]:
    rows = capsule_rows()
    teacher = teacher_from_lab_oracles(TOKEN_ORACLE, TEXT_ORACLE, LAB_AXES, lane=LANE)
    pairs = list(zip(teacher.rows, rows, strict=True))

    def bare() -> bool:
        return all(t.token_ids == r.token_ids and t.text_sha256 == r.text_sha256 for t, r in pairs)

    verdict_s = best(lambda: bitwise_teacher(rows, teacher, LAB_AXES, max_tokens=512))
    bare_s = best(bare)

    ids = [random.Random(1).randrange(50_000) for _ in range(65_536)]
    ngram_s = best(lambda: most_repeated_ngram(ids, 16), repeat=5)
    counter_s = best(lambda: Counter(zip(*(ids[i:] for i in range(16)), strict=False)), repeat=5)

    files = (TOKEN_ORACLE, TEXT_ORACLE)
    size = sum(len(p.read_bytes()) for p in files)
    import_s = best(lambda: teacher_from_lab_oracles(*files, LAB_AXES, lane=LANE))
    parse_s = best(lambda: [json.loads(p.read_bytes()) for p in files])

    return [
        ("bitwise-teacher 13 rows (ms)", verdict_s * 1e3, "one verdict on the real record"),
        ("bitwise-teacher / bare compare", verdict_s / bare_s,
         "typed per-row verdict vs comparing the lists and digests only"),
        ("repetition 64k tokens (ms)", ngram_s * 1e3, "16-gram loop detector on one long answer"),
        ("repetition / Counter floor", ngram_s / counter_s, "detector vs counting the n-grams"),
        ("lab oracle import (ms)", import_s * 1e3, f"{size / 1e3:.0f} kB of oracle JSON"),
        ("lab oracle import / json.loads", import_s / parse_s, "validated teacher vs parsing"),
    ]


if __name__ == "__main__":
    for name, value, explanation in run():
        print(f"{name:<36} {value:>10.3f}  {explanation}")
