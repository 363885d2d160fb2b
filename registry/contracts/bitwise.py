"""`bitwise-teacher`: every row equals the lane's teacher, token for token.

A row is exact when its prompt identity matches (index, id, prompt sha256), it was
served cold (`cached_tokens == 0`), its full token id list is equal and the sha256 of
its text is equal. Aggregate checks follow the lab: all rows exact, the longest
prompt exact, and a long (max_tokens) response followed by the next request exact.

The contract refuses, rather than fails, a run whose binding axes differ from the
teacher's: a different precision is a different contract, not a broken one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from registry.contracts.teacher import AXES, Teacher, TeacherRow, binds, row_text_sha256
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

CONTRACT = "bitwise-teacher"
_SHORT = {"bfloat16": "BF16", "float16": "FP16", "float32": "FP32"}


def bitwise_teacher(rows: Sequence[BenchRow], teacher: Teacher | None,
                    run_axes: Mapping[str, str | None], *,
                    max_tokens: int | None = None,
                    run_kernel: Mapping[str, str | None] | None = None) -> Verdict:
    """Judge `rows` against `teacher`; `max_tokens` marks long responses (else finish_reason)."""
    if teacher is None:
        return refused(CONTRACT, ["no teacher is set for this lane: set one with "
                                  "`registry teacher set RECORD --lane LANE`"])
    reference = f"teacher of lane {teacher.lane} ({teacher.source.kind} {teacher.source.ref[:12]})"
    differences = axis_differences(teacher.axes, run_axes)
    differences += kernel_differences(teacher.kernel, run_kernel or {})
    if differences:
        return refused(CONTRACT, differences, reference)
    by_index: dict[int, BenchRow] = {}
    verdicts = []
    for row in rows:
        if row.index in by_index:
            verdicts.append(_duplicate(row))
        by_index.setdefault(row.index, row)
    verdicts += [_row(t, by_index.get(t.index)) for t in teacher.rows]
    known = {t.index for t in teacher.rows}
    verdicts += [_extra(r) for i, r in by_index.items() if i not in known]
    verdicts.sort(key=lambda v: v.index)
    exact: dict[int, bool] = {}
    for v in verdicts:  # a duplicated index is exact only if every copy is
        exact[v.index] = exact.get(v.index, True) and v.passed
    checks = [
        Check(name="all rows exact", passed=all(exact.values()),
              detail=f"{sum(exact.values())}/{len(exact)} rows exact"),
        _longest_prompt(by_index, exact),
        _long_then_next(by_index, exact, max_tokens),
    ]
    return judged(CONTRACT, verdicts, checks, reference)


def axis_differences(teacher: Mapping[str, str | None], run: Mapping[str, str | None]) -> list[str]:
    """One reason per binding axis whose values differ, naming both values."""
    return [f"{a} {_shown(t)} vs {_shown(r)}: {_why(a, t, r)}"
            for a in AXES if (t := teacher.get(a)) != (r := run.get(a)) and binds(a, t)]


def kernel_differences(teacher: Mapping[str, str | None] | None,
                       run: Mapping[str, str | None]) -> list[str]:
    """One reason per kernel axis the teacher was made on that the run did not run: the
    oracle belongs to that kernel (an axis the teacher does not name binds nothing)."""
    return [f"{a} {_shown(t)} vs {_shown(r)}: another kernel; regenerate the teacher on it "
            "(an oracle belongs to the kernel that produced it)"
            for a, t in (teacher or {}).items() if t is not None and t != (r := run.get(a))]


def _row(expected: TeacherRow, row: BenchRow | None) -> RowVerdict:
    if row is None:
        return row_verdict(expected.index, expected.prompt_id,
                           {"present": (False, "missing from the run")})
    diff = first_diff(expected.token_ids, row.token_ids)
    text_digest = row_text_sha256(row)
    return row_verdict(row.index, row.prompt_id, {
        "identity_equal": ((row.prompt_id, row.prompt_sha256)
                           == (expected.prompt_id, expected.prompt_sha256),
                           f"prompt {row.prompt_id} {row.prompt_sha256[:12]} is not the teacher's "
                           f"{expected.prompt_id} {expected.prompt_sha256[:12]}"),
        "cached_zero": (row.cached_tokens == 0,
                        f"cached_tokens = {row.cached_tokens} (must be 0: served cold)"),
        "token_ids_equal": (diff is None, describe(diff) if diff else ""),
        "text_sha256_equal": (text_digest == expected.text_sha256,
                              "text sha256 differs" if text_digest else "no text to hash"),
        "no_error": (row.error is None, f"request failed: {row.error}"),
    }, first_diff=diff)


def _duplicate(row: BenchRow) -> RowVerdict:
    return row_verdict(row.index, row.prompt_id,
                       {"sent_once": (False, "prompt index sent more than once")})


def _extra(row: BenchRow) -> RowVerdict:
    return row_verdict(row.index, row.prompt_id,
                       {"in_teacher": (False, "the teacher has no row with this index")})


def _longest_prompt(rows: Mapping[int, BenchRow], exact: Mapping[int, bool]) -> Check:
    sized = [r for r in rows.values() if r.prompt_tokens is not None]
    if not sized:
        return Check(name="longest prompt exact", passed=False,
                     detail="no row reports prompt_tokens: the longest prompt is unknown")
    longest = max(sized, key=lambda r: (r.prompt_tokens, -r.index))
    return Check(name="longest prompt exact", passed=exact[longest.index],
                 detail=f"row {longest.index} ({longest.prompt_id}, {longest.prompt_tokens} prompt "
                        f"tokens) {_exact(exact[longest.index])}")


def _long_then_next(rows: Mapping[int, BenchRow], exact: Mapping[int, bool],
                    max_tokens: int | None) -> Check:
    """The first response cut at max_tokens and the request sent right after it."""
    name = "long response then next exact"
    for index in sorted(rows):
        if _is_long(rows[index], max_tokens) and index + 1 in rows:
            long, after = rows[index], rows[index + 1]
            return Check(name=name, passed=exact[index] and exact[index + 1],
                         detail=f"row {index} ({long.prompt_id}, {long.completion_tokens} tokens) "
                                f"{_exact(exact[index])}, next row {index + 1} "
                                f"({after.prompt_id}) {_exact(exact[index + 1])}")
    return Check(name=name, passed=False,
                 detail="no response reached max_tokens before another request")


def _is_long(row: BenchRow, max_tokens: int | None) -> bool:
    if row.finish_reason is not None:
        return row.finish_reason == "length"
    return max_tokens is not None and (row.completion_tokens or 0) >= max_tokens


def _exact(passed: bool) -> str:
    return "exact" if passed else "not exact"


def _shown(value: str | None) -> str:
    return "(none)" if value is None else value


def _why(axis: str, teacher: str | None, run: str | None) -> str:
    if run is None:
        return "unresolved in this run: no evidence proves it is the teacher's"
    if teacher is None:
        return "the teacher ran without it"
    if axis.startswith("precision."):
        return (f"Never use {_label(teacher)} token hashes as an expected {_label(run)} bitwise "
                "gate; judge this run by its own teacher, self-consistency or semantic gates")
    if axis == "model.revision":
        return "the teacher ran another checkpoint revision"
    return "the teacher answered another prompt suite"


def _label(value: str) -> str:
    if value.startswith("fp8"):
        return "FP8"
    return _SHORT.get(value, value.upper())
