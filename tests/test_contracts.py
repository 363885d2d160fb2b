"""Contracts as pure functions over raw rows: bitwise details, self-consistency,
semantic gates, and `evaluate` choosing the recipe's contract."""

from __future__ import annotations

import hashlib
import json

import pytest

from registry.contracts import CONTRACTS, evaluate
from registry.contracts.bitwise import bitwise_teacher
from registry.contracts.consistency import self_consistency
from registry.contracts.semantic import most_repeated_ngram, semantic_gates
from registry.errors import InvalidInput, InvalidRecipe
from registry.formats.identity import ResolvedField, ResolvedIdentity, Status
from registry.formats.rundir import BenchRow, SuiteRef
from registry.formats.verdict import VerdictStatus, first_diff
from registry.recipe.loader import validate
from registry.recipe.schema import ContractName, Recipe, RepetitionGate
from tests.recipe_factory import MINIMAL
from tests.test_teacher import LAB_AXES, capsule_rows, lab_teacher, tampered

# --- bitwise-teacher: row checks -------------------------------------------------


def _bitwise(rows: list[BenchRow]):
    return bitwise_teacher(rows, lab_teacher(), LAB_AXES, max_tokens=512)


def test_prefix_cache_reuse_fails_the_row() -> None:
    rows = capsule_rows()
    rows[4] = rows[4].model_copy(update={"cached_tokens": 64})
    verdict = _bitwise(rows)
    assert verdict.status is VerdictStatus.failed
    assert verdict.rows[4].checks["cached_zero"] is False
    assert verdict.rows[4].checks["token_ids_equal"] is True
    assert "cached_tokens = 64 (must be 0: served cold)" in verdict.rows[4].detail


def test_a_changed_text_digest_fails_only_the_text_check() -> None:
    rows = capsule_rows()
    rows[2] = rows[2].model_copy(update={"text_sha256": "0" * 64})
    row = _bitwise(rows).rows[2]
    assert not row.passed
    assert [name for name, ok in row.checks.items() if not ok] == ["text_sha256_equal"]


def test_the_text_digest_is_rederived_from_the_text() -> None:
    rows = capsule_rows()
    # a stored digest that matches the teacher, beside a text that does not
    rows[2] = rows[2].model_copy(update={"text": "something else"})
    assert _bitwise(rows).rows[2].checks["text_sha256_equal"] is False
    text = "an answer"
    row = rows[2].model_copy(update={"text": text, "text_sha256": None})
    assert hashlib.sha256(text.encode()).hexdigest() != lab_teacher().rows[2].text_sha256
    assert _bitwise([*rows[:2], row, *rows[3:]]).rows[2].checks["text_sha256_equal"] is False


def test_a_prompt_identity_change_is_reported() -> None:
    rows = capsule_rows()
    rows[1] = rows[1].model_copy(update={"prompt_sha256": "f" * 64})
    row = _bitwise(rows).rows[1]
    assert row.checks["identity_equal"] is False
    assert "is not the teacher's python-debug-window" in row.detail


def test_missing_extra_and_repeated_rows_fail() -> None:
    rows = capsule_rows()
    extra = rows[0].model_copy(update={"index": 13, "prompt_id": "extra"})
    verdict = _bitwise([*rows[:5], *rows[6:], extra, rows[3]])
    bad = {(r.index, r.detail) for r in verdict.rows if not r.passed}
    assert bad == {(5, "missing from the run"), (13, "the teacher has no row with this index"),
                   (3, "prompt index sent more than once")}
    assert verdict.checks[0].detail == "11/14 rows exact"


def test_a_short_output_diffs_where_it_ends() -> None:
    rows = capsule_rows()
    expected = rows[10].token_ids[100]
    rows[10] = rows[10].model_copy(update={"token_ids": rows[10].token_ids[:100]})
    diff = _bitwise(rows).rows[10].first_diff
    assert diff.model_dump() == {"index": 100, "expected": expected, "actual": None}


def test_first_diff() -> None:
    assert first_diff([1, 2, 3], [1, 2, 3]) is None
    assert first_diff([1, 2, 3], [1, 5, 3]).model_dump() == {"index": 1, "expected": 2, "actual": 5}
    assert first_diff([1], [1, 7]).model_dump() == {"index": 1, "expected": None, "actual": 7}


def test_aggregate_checks_need_their_facts() -> None:
    rows = [r.model_copy(update={"prompt_tokens": None, "completion_tokens": 10})
            for r in capsule_rows()]
    checks = {c.name: c for c in _bitwise(rows).checks}
    assert not checks["longest prompt exact"].passed
    assert "no row reports prompt_tokens" in checks["longest prompt exact"].detail
    assert not checks["long response then next exact"].passed


def test_finish_reason_marks_the_long_response() -> None:
    rows = [r.model_copy(update={"finish_reason": "length" if r.index == 4 else "stop"})
            for r in capsule_rows()]
    check = _bitwise(rows).checks[2]
    assert check.passed and check.detail.startswith("row 4 (arithmetic-reasoning")


# --- self-consistency ------------------------------------------------------------


def test_identical_runs_are_consistent() -> None:
    verdict = self_consistency([capsule_rows(), capsule_rows(), capsule_rows()], repeats=3)
    assert verdict.status is VerdictStatus.passed
    assert (verdict.rows_passed, verdict.rows_total) == (26, 26)
    assert verdict.checks[0].detail == "26/26 rows identical to the first of 3 runs"


def test_a_divergent_repeat_names_row_and_position() -> None:
    rows = capsule_rows()
    verdict = self_consistency([rows, rows, tampered(rows, 11, 11)])
    assert verdict.status is VerdictStatus.failed
    [bad] = [r for r in verdict.rows if not r.passed]
    assert (bad.repeat, bad.index, bad.first_diff.index) == (2, 11, 11)
    assert verdict.reasons[0].startswith(
        "row 11 (prose-decision-memo) [repeat 2]: token ids differ at output index 11")


def test_one_run_cannot_be_self_consistent() -> None:
    verdict = self_consistency([capsule_rows()])
    assert verdict.status is VerdictStatus.refused
    assert "needs 2 row sets from fresh servers, got 1" in verdict.reasons[0]


def test_missing_prompts_and_failed_requests_are_not_consistent() -> None:
    rows = capsule_rows()
    errored = [r.model_copy(update={"error": "timeout", "token_ids": []}) for r in rows]
    assert self_consistency([errored, errored]).status is VerdictStatus.failed
    assert self_consistency([rows, rows[:-1]]).rows[-1].detail == "missing from this run"


# --- semantic gates --------------------------------------------------------------


def _row(index: int, prompt_id: str, text: str, **extra) -> BenchRow:
    return BenchRow(suite="s", index=index, prompt_id=prompt_id, prompt_sha256="0" * 64,
                    text=text, **extra)


def _gates(*tables: str) -> list:
    recipe = validate_recipe('[quality]\ncontract = "semantic-gates"\n' + "".join(tables))
    return recipe.quality.gates


def validate_recipe(extra: str) -> Recipe:
    import tomllib
    from pathlib import Path

    return validate(tomllib.loads(MINIMAL + extra), Path("t.toml"))


TOOL_SCHEMA = """
[[quality.gates]]
kind = "json-schema"
prompts = ["tool"]
schema = { type = "object", required = ["name", "arguments"], properties = { \
name = { type = "string" }, arguments = { type = "object" } } }
"""


def test_json_schema_gate() -> None:
    gates = _gates(TOOL_SCHEMA)
    good = _row(0, "tool", json.dumps({"name": "search", "arguments": {"q": "x"}}))
    wrong = _row(0, "tool", json.dumps({"name": "search", "arguments": "q=x"}))
    prose = _row(0, "tool", "Sure! Here is the call: {}")
    assert semantic_gates([good], gates).status is VerdictStatus.passed
    assert semantic_gates([wrong], gates).rows[0].detail == (
        "at /arguments: 'q=x' is not of type 'object'")
    assert semantic_gates([prose], gates).rows[0].detail.startswith("output is not JSON")


def test_an_invalid_json_schema_is_a_recipe_error() -> None:
    bad = TOOL_SCHEMA.replace('type = "object", required', 'type = "objekt", required')
    with pytest.raises(InvalidRecipe, match=r"quality\.gates\.0\.json-schema\.schema: not a valid"):
        validate_recipe('[quality]\ncontract = "semantic-gates"\n' + bad)


def test_fragments_gate() -> None:
    gates = _gates('[[quality.gates]]\nkind = "fragments"\nprompts = ["*"]\n'
                   'required = ["def get", "def put"]\nforbidden = ["TODO"]\n')
    rows = [_row(0, "a", "def get(k): ...\ndef put(k, v): ..."),
            _row(1, "b", "def get(k): ...  # TODO put")]
    verdict = semantic_gates(rows, gates)
    assert [r.passed for r in verdict.rows] == [True, False]
    assert verdict.rows[1].detail == ("missing required fragments ['def put']; "
                                      "contains forbidden fragments ['TODO']")


def test_needle_gate_checks_the_answer_and_the_context_length() -> None:
    gates = _gates('[[quality.gates]]\nkind = "needle"\nprompts = ["n"]\n'
                   'needle = "the vault code is 7431"\ncontext_tokens = 32768\n')
    found = _row(0, "n", "The  vault code is 7431.", prompt_tokens=32000)
    short = _row(0, "n", "the vault code is 7431", prompt_tokens=4000)
    lost = _row(0, "n", "I could not find a code.", prompt_tokens=32000)
    assert semantic_gates([found], gates).status is VerdictStatus.passed
    assert semantic_gates([short], gates).rows[0].checks == {"needle_found": True,
                                                             "context_length": False}
    assert "does not contain 'the vault code is 7431'" in semantic_gates([lost], gates).reasons[0]


def test_real_answers_pass_the_default_repetition_gate() -> None:
    gate = RepetitionGate(kind="no-repetition")
    assert semantic_gates(capsule_rows(), [gate]).status is VerdictStatus.passed


def test_short_ngrams_flag_a_real_markdown_table() -> None:
    """Why the default n-gram is 16: at 8 the lab's correct table answer looks like a loop."""
    verdict = semantic_gates(capsule_rows(), [RepetitionGate(kind="no-repetition", ngram=8)])
    assert [(r.prompt_id, r.passed) for r in verdict.rows if not r.passed] == [
        ("factual-protocol", False)]


def test_a_loop_is_caught() -> None:
    row = capsule_rows()[0]
    looped = row.token_ids[:300] + row.token_ids[100:130] * 7  # period 30: 7 copies + original
    verdict = semantic_gates([row.model_copy(update={"token_ids": looped})],
                             [RepetitionGate(kind="no-repetition")])
    assert verdict.status is VerdictStatus.failed
    assert "occurs 8 times (at most 4 allowed): a degenerate loop" in verdict.rows[0].detail
    assert most_repeated_ngram([5] * 40, 16) == (0, 25)
    assert most_repeated_ngram([1, 2, 3], 16) is None


def test_a_gate_naming_an_absent_prompt_fails() -> None:
    verdict = semantic_gates([_row(0, "other", "{}")], _gates(TOOL_SCHEMA))
    assert verdict.status is VerdictStatus.failed
    assert verdict.reasons == ["json-schema[0] covers its prompts: no row for prompts ['tool']"]


def test_text_gates_need_text_and_a_failed_request_fails() -> None:
    gates = _gates(TOOL_SCHEMA)
    no_text = BenchRow(suite="s", index=0, prompt_id="tool", prompt_sha256="0" * 64)
    errored = _row(0, "tool", "", error="HTTP 500")
    assert semantic_gates([no_text], gates).rows[0].detail == "the row stores no output text"
    assert semantic_gates([errored], gates).rows[0].detail == "request failed: HTTP 500"


# --- evaluate: the recipe picks the contract -------------------------------------


def _identity(axes: dict[str, str | None]) -> ResolvedIdentity:
    return ResolvedIdentity(fields={
        name: ResolvedField(resolved=value,
                            status=Status.undeclared if value else Status.unresolved)
        for name, value in axes.items() if name != "suite.sha256"})


def test_the_table_names_every_contract_but_none() -> None:
    assert set(CONTRACTS) == {c.value for c in ContractName} - {"none"}


def test_evaluate_uses_the_recipe_contract_and_the_resolved_axes() -> None:
    recipe = validate_recipe('[quality]\ncontract = "bitwise-teacher"\n')
    rows = [r.model_copy(update={"suite": "s"}) for r in capsule_rows()]
    suites = [SuiteRef(name="s", sha256=LAB_AXES["suite.sha256"])]
    identity = _identity(LAB_AXES)
    verdict = evaluate(recipe, rows, identity, lab_teacher(), suites=suites)
    assert verdict.contract == "bitwise-teacher" and verdict.status is VerdictStatus.passed
    fp8 = _identity({**LAB_AXES, "precision.kv_cache": "fp8_e4m3"})
    assert evaluate(recipe, rows, fp8, lab_teacher(), suites=suites).status is VerdictStatus.refused
    other_suite = [SuiteRef(name="s", sha256="e" * 64)]
    refused = evaluate(recipe, rows, identity, lab_teacher(), suites=other_suite)
    assert refused.reasons[0].startswith(f"suite.sha256 {LAB_AXES['suite.sha256']} vs {'e' * 64}")


def test_evaluate_other_contracts_and_none() -> None:
    recipe = validate_recipe('[quality]\ncontract = "bitwise-teacher"\n')
    rows = capsule_rows()
    identity = _identity(LAB_AXES)
    consistent = evaluate(recipe, rows, identity, None, others=[rows],
                          contract="self-consistency")
    assert consistent.status is VerdictStatus.passed
    assert evaluate(validate_recipe(""), rows, identity, None) is None
    with pytest.raises(InvalidInput, match="unknown contract 'bitwise'"):
        evaluate(recipe, rows, identity, None, contract="bitwise")


def test_semantic_gates_without_gates_refuse() -> None:
    verdict = semantic_gates(capsule_rows(), [])
    assert verdict.status is VerdictStatus.refused
    assert verdict.reasons == ["no [[quality.gates]] declared: nothing to judge"]


def test_an_unresolved_axis_is_never_taken_as_the_teachers() -> None:
    recipe = validate_recipe('[quality]\ncontract = "bitwise-teacher"\n')
    rows = [r.model_copy(update={"suite": "s"}) for r in capsule_rows()]
    identity = _identity(LAB_AXES)
    partial = ResolvedField(declared="int4-w4a16", resolved="compressed-tensors",
                            status=Status.unresolved)  # the method, not the scheme
    identity = identity.model_copy(
        update={"fields": {**identity.fields, "precision.weights": partial}})
    verdict = evaluate(recipe, rows, identity, lab_teacher(),
                       suites=[SuiteRef(name="s", sha256=LAB_AXES["suite.sha256"])])
    assert verdict.status is VerdictStatus.refused
    assert verdict.reasons == ["precision.weights int4-w4a16 vs (none): unresolved in this run: "
                               "no evidence proves it is the teacher's"]
