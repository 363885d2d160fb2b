"""`semantic-gates`: declared checks on what a run answered, per gate per prompt.

For a run that has no bitwise teacher (another KV precision, say), these say whether
the answers are still good: structured output that validates against a JSON schema,
required and forbidden fragments, no degenerate repetition, and needle retrieval at
the context length the prompt really had.

Repetition: a greedy decode that falls into a loop repeats the same token span
until max_tokens. The detector counts every (overlapping) token n-gram of the
output and fails when one occurs more than `max_repeats` times. Short spans recur
in good answers (a markdown table repeats its `| --- |` cells: in the lab's real
Laguna suite one 12-token span occurs 8 times in a correct answer), so the default
n-gram is 16 tokens, which no correct answer in that suite repeats more than twice.
A loop of period p shows each of its 16-grams once every p tokens, so with the
default `max_repeats = 4` it is caught after 5p + 15 tokens: within a 512-token
answer for any period up to 99 tokens.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from registry.formats.rundir import BenchRow
from registry.formats.verdict import Check, RowVerdict, Verdict, judged, refused, row_verdict
from registry.recipe.schema import (
    CodeGate,
    FragmentsGate,
    JsonSchemaGate,
    NeedleGate,
    RepetitionGate,
    SameAnswerGate,
)

CONTRACT = "semantic-gates"
ALL = "*"
# A suite fills its needle prompts to just under the nominal length, leaving room for
# the answer: the prompt must reach 90% of `context_tokens` for the gate to count.
CONTEXT_FILL = 0.9

Gate = JsonSchemaGate | FragmentsGate | RepetitionGate | NeedleGate | CodeGate | SameAnswerGate
Checks = dict[str, tuple[bool, str]]
CODE_BLOCK = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.S)


def semantic_gates(rows: Sequence[BenchRow], gates: Sequence[Gate]) -> Verdict:
    """Judge each gate on each row its `prompts` selects (`["*"]` selects every row)."""
    if not gates:
        return refused(CONTRACT, ["no [[quality.gates]] declared: nothing to judge"])
    verdicts: list[RowVerdict] = []
    coverage: list[Check] = []
    for position, gate in enumerate(gates):
        name = f"{gate.kind}[{position}]"
        selected = [r for r in rows if ALL in gate.prompts or r.prompt_id in gate.prompts]
        verdicts += [row_verdict(r.index, r.prompt_id, _checks(gate, r, selected), gate=name)
                     for r in selected]
        missing = sorted(set(gate.prompts) - {ALL} - {r.prompt_id for r in rows})
        coverage.append(Check(
            name=f"{name} covers its prompts", passed=bool(selected) and not missing,
            detail=f"no row for prompts {missing}" if missing
            else f"{len(selected)} rows judged" if selected else "no rows to judge"))
    return judged(CONTRACT, verdicts, coverage, reference=f"{len(gates)} declared gates")


def _checks(gate: Gate, row: BenchRow, selected: Sequence[BenchRow]) -> Checks:
    if row.error is not None:
        return {"answered": (False, f"request failed: {row.error}")}
    if isinstance(gate, SameAnswerGate):
        return _same_answer(row, selected)
    if row.text is None and not isinstance(gate, RepetitionGate):
        return {"answered": (False, "the row stores no output text")}
    return _JUDGES[gate.kind](gate, row)


def _json_schema(gate: JsonSchemaGate, row: BenchRow) -> Checks:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

    try:
        value = json.loads((row.text or "").strip())
    except json.JSONDecodeError as e:
        return {"json": (False, f"output is not JSON ({e.msg} at character {e.pos})")}
    except (RecursionError, ValueError):  # nested too deep; an integer too long to convert
        return {"json": (False, "output is not JSON the gate can read (too deep or too long)")}
    error = best_match(Draft202012Validator(gate.json_schema).iter_errors(value))
    where = "/".join(str(p) for p in error.absolute_path) if error else ""
    return {"json": (True, ""),
            "schema_valid": (error is None, f"at /{where}: {error.message}" if error else "")}


def _fragments(gate: FragmentsGate, row: BenchRow) -> Checks:
    text = row.text or ""
    missing = [f for f in gate.required if f not in text]
    present = [f for f in gate.forbidden if f in text]
    return {"required_present": (not missing, f"missing required fragments {missing}"),
            "forbidden_absent": (not present, f"contains forbidden fragments {present}")}


def _repetition(gate: RepetitionGate, row: BenchRow) -> Checks:
    worst = most_repeated_ngram(row.token_ids, gate.ngram)
    if worst is None:
        return {"no_loop": (True, "")}
    start, count = worst
    return {"no_loop": (count <= gate.max_repeats,
                        f"the {gate.ngram}-token span at output index {start} occurs {count} times "
                        f"(at most {gate.max_repeats} allowed): a degenerate loop")}


def most_repeated_ngram(token_ids: Sequence[int], n: int) -> tuple[int, int] | None:
    """(first position, occurrences) of the most frequent n-gram; None if shorter than n."""
    if len(token_ids) < n:
        return None
    ids = tuple(token_ids)
    grams = list(zip(*(ids[i:] for i in range(n)), strict=False))  # every window of n
    gram, count = Counter(grams).most_common(1)[0]
    return grams.index(gram), count


def _needle(gate: NeedleGate, row: BenchRow) -> Checks:
    checks: Checks = {"needle_found": (_normal(gate.needle) in _normal(row.text or ""),
                                       f"the answer does not contain {gate.needle!r}")}
    if gate.context_tokens is not None:
        needed = int(gate.context_tokens * CONTEXT_FILL)
        long_enough = row.prompt_tokens is not None and row.prompt_tokens >= needed
        checks["context_length"] = (long_enough, f"prompt has {row.prompt_tokens} tokens; "
                                    f"the gate is at {gate.context_tokens} (needs {needed})")
    return checks


def _code(gate: CodeGate, row: BenchRow) -> Checks:
    """The answer's first fenced code block (else the whole answer) run in the sandbox."""
    from registry.contracts.sandbox import run_python

    text = row.text or ""
    block = CODE_BLOCK.search(text)
    ran = run_python(block[1] if block else text, stdin=gate.stdin, timeout_s=gate.timeout_s,
                     memory_mib=gate.memory_mib)
    if not ran.ran:
        return {"code_ran": (False, ran.reason)}
    last = ran.stderr.strip().splitlines()[-1:] if ran.stderr.strip() else []
    got = ran.stdout.strip()
    return {"code_ran": (ran.exit_code == 0, f"{ran.reason}" + (f": {last[0]}" if last else "")),
            "output_expected": (got == gate.expected_stdout.strip(),
                                f"printed {got[:80]!r}, expected "
                                f"{gate.expected_stdout.strip()[:80]!r}")}


def _same_answer(row: BenchRow, selected: Sequence[BenchRow]) -> Checks:
    first = next((r for r in selected if r.error is None), row)
    return {"same_answer": (row.token_ids == first.token_ids,
                            f"differs from prompt {first.prompt_id!r}'s answer")}


def _normal(text: str) -> str:
    """Case and runs of whitespace do not decide whether a needle was retrieved."""
    return " ".join(text.casefold().split())


_JUDGES: dict[str, Callable[[Any, BenchRow], Checks]] = {
    "json-schema": _json_schema,
    "fragments": _fragments,
    "no-repetition": _repetition,
    "needle": _needle,
    "code": _code,
}
