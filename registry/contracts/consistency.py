"""`self-consistency`: the same prompts, sent to N freshly started servers of the same
recipe, give identical token ids (within-mode determinism).

This is the contract for a precision that has no teacher of its own yet (an FP8 KV
cache, say): it proves the mode is deterministic without pretending it equals BF16.
The first row set is the reference; each other set is compared row by row.
"""

from __future__ import annotations

from collections.abc import Sequence

from registry.formats.rundir import BenchRow
from registry.formats.verdict import (
    Check,
    RowVerdict,
    Verdict,
    describe,
    first_diff,
    judged,
    refused,
    row_verdict,
)

CONTRACT = "self-consistency"

Key = tuple[str, int]


def self_consistency(row_sets: Sequence[Sequence[BenchRow]], *, repeats: int = 2) -> Verdict:
    """Passed when every set holds the reference set's prompts with identical token ids."""
    if len(row_sets) < repeats:
        return refused(CONTRACT, [
            f"self-consistency needs {repeats} row sets from fresh servers, got {len(row_sets)}: "
            "reproduce the record, or name the other runs to compare"])
    reference = _keyed(row_sets[0])
    verdicts: list[RowVerdict] = []
    for repeat, rows in enumerate(row_sets[1:], start=1):
        keyed = _keyed(rows)
        verdicts += [_compare(repeat, ref, keyed.get(key)) for key, ref in reference.items()]
        verdicts += [_extra(repeat, row) for key, row in keyed.items() if key not in reference]
    same = sum(v.passed for v in verdicts)
    check = Check(name="identical token ids", passed=same == len(verdicts),
                  detail=f"{same}/{len(verdicts)} rows identical to the first of "
                         f"{len(row_sets)} runs")
    return judged(CONTRACT, verdicts, [check], reference=f"{len(row_sets)} runs of one recipe")


def _keyed(rows: Sequence[BenchRow]) -> dict[Key, BenchRow]:
    return {(r.suite, r.index): r for r in rows}


def _compare(repeat: int, reference: BenchRow, row: BenchRow | None) -> RowVerdict:
    if row is None:
        return row_verdict(reference.index, reference.prompt_id,
                           {"present": (False, "missing from this run")}, repeat=repeat)
    diff = first_diff(reference.token_ids, row.token_ids)
    error = reference.error or row.error
    return row_verdict(row.index, row.prompt_id, {
        "identity_equal": ((row.prompt_id, row.prompt_sha256)
                           == (reference.prompt_id, reference.prompt_sha256),
                           f"prompt {row.prompt_id} is not {reference.prompt_id}"),
        "complete": (bool(reference.token_ids) and not error,
                     f"no output to compare ({error or 'no token ids'})"),
        "token_ids_equal": (diff is None, describe(diff) if diff else ""),
    }, repeat=repeat, first_diff=diff)


def _extra(repeat: int, row: BenchRow) -> RowVerdict:
    return row_verdict(row.index, row.prompt_id,
                       {"in_reference": (False, "not in the first run")}, repeat=repeat)
