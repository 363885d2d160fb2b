"""Promotion: the lab's realistic final gate re-derived from raw rows (each breach a named
code, the class-balanced headline computed here from the rows' own times), the gates
judged from a real sealed record and signed as one verification, and the lab's real
promotion attestation judged as its own checker does."""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
from pathlib import Path

import pytest

from registry.formats.rundir import Bench, BenchRow, SuiteRef
from registry.promote.finalgate import FinalGateRules, judge_final_gate
from registry.promote.labattestation import judge_lab_attestation
from tests.conftest import ROOT

LAB = ROOT / "tests" / "data" / "lab-promotion"
ATTESTATION = LAB / "repro/minimax-h3-pruned-bf16-tp2-b70-20261004/promotion-attestation.json"
CLASSES = ["prose", "code", "analysis", "operations", "documentation", "structured-writing"]


def suite_bench(n: int = 12, change: dict | None = None) -> tuple[Bench, dict[str, str]]:
    """`n` prompts spread over six classes, each row paced at its own step."""
    rows = [BenchRow(suite="real", index=i, prompt_id=f"p{i}", prompt_tokens=500 + i,
                     prompt_sha256=hashlib.sha256(f"prompt {i}".encode()).hexdigest(),
                     cached_tokens=0, completion_tokens=512, token_ids=list(range(512)),
                     token_times_s=[0.1 * (1 + i % 3) + k * 0.01 * (1 + i / 10)
                                    for k in range(512)])
            for i in range(n)]
    rows = [r.model_copy(update=(change or {}).get(r.index, {})) for r in rows]
    bench = Bench(api="completions", model="m", params={"max_tokens": {"real": 512}},
                  suites=[SuiteRef(name="real", prompts=n)], rows=rows)
    return bench, {f"p{i}": CLASSES[i % len(CLASSES)] for i in range(n)}


def test_a_full_suite_passes_with_the_median_of_class_medians_as_headline():
    bench, classes = suite_bench()
    gate = judge_final_gate(bench, FinalGateRules(), classes)
    assert gate.passed, gate.failures
    rates = {r.prompt_id: 99 / (r.token_times_s[99] - r.token_times_s[0]) for r in bench.rows}
    per_class = {c: statistics.median(rates[p] for p in rates if classes[p] == c)
                 for c in set(classes.values())}
    assert gate.headline_tok_s == pytest.approx(statistics.median(per_class.values()))
    assert gate.all_prompt_median_tok_s == pytest.approx(statistics.median(rates.values()))
    ttft = [r.prompt_tokens / r.token_times_s[0] for r in bench.rows]
    assert gate.prefill_tok_s == pytest.approx(statistics.median(ttft))
    assert "prefill" in gate.prefill_text and "not measured" not in gate.prefill_text


def test_a_class_heavy_suite_headline_weighs_each_class_once():
    bench, classes = suite_bench(14)
    gate = judge_final_gate(bench, FinalGateRules(), classes)
    medians = sorted(c.median_tok_s for c in gate.classes)
    assert gate.headline_tok_s == pytest.approx(statistics.median(medians))
    assert {c.prompts for c in gate.classes} == {2, 3}


@pytest.mark.parametrize(("change", "code"), [
    ({3: {"cached_tokens": 17}}, "cached_tokens_not_zero"),
    ({3: {"cached_tokens": None}}, "cached_tokens_not_reported"),
    ({3: {"prompt_id": "p4"}}, "fixed_suite_incomplete"),
    ({5: {"token_times_s": [0.1 + k * 0.01 for k in range(60)], "completion_tokens": 60}},
     "every_completion_must_cover_100_event_metric"),
    ({0: {"error": "HTTP 500"}}, "rows_with_errors"),
])
def test_each_breach_of_a_row_is_named(change, code):
    bench, classes = suite_bench(change=change)
    gate = judge_final_gate(bench, FinalGateRules(), classes)
    assert not gate.passed and code in gate.failures


def test_breaches_of_the_suite_shape_are_named():
    bench, _ = suite_bench(8)
    bench = bench.model_copy(update={"params": {"max_tokens": 256,
                                                "request_extra": {"ignore_eos": True}}})
    gate = judge_final_gate(bench, FinalGateRules(), {"p0": "code"})
    assert {"fixed_suite_has_fewer_than_12_prompts", "max_tokens_must_equal_512",
            "ignore_eos_must_be_disabled", "fixed_suite_lacks_varied_prompt_classes"} \
        <= set(gate.failures)
    twice = {3: {"prompt_sha256": suite_bench()[0].rows[4].prompt_sha256}}
    assert "prompts_not_unique" in judge_final_gate(
        *suite_bench(change=twice)[:1], FinalGateRules(), suite_bench()[1]).failures


def test_a_suite_without_rows_fails_closed():
    bench, classes = suite_bench()
    empty = bench.model_copy(update={"rows": []})
    gate = judge_final_gate(empty, FinalGateRules(), classes)
    assert not gate.passed and "no_rows" in gate.failures and gate.headline_tok_s is None
    assert "not measured" in gate.prefill_text


def test_the_labs_real_attestation_fails_on_the_gates_its_checker_names():
    judged = judge_lab_attestation(ATTESTATION, LAB)
    assert not judged.passed
    stated = json.loads(ATTESTATION.read_text())["gates"]
    false = [g for g, v in stated.items() if v is not True]
    assert len(false) == 4
    assert [f"gate_{g}_not_true" for g in false] == judged.failures[:4]
    # the owner's decision supports no gate; the four false gates have no evidence
    assert "quality_evidence_1_supports_invalid" in judged.failures
    assert {f"gate_{g}_has_no_bound_evidence" for g in false} <= set(judged.failures)
    assert len(judged.failures) == 9
    bound = {g.name: g.supported_by for g in judged.gates}
    assert bound["target_model_unchanged"] == [
        "experiments/minimax-h3-b70/data/2026-10-04-soak8/session.log"]


def lab_copy(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "lab"
    shutil.copytree(LAB, root)
    return root, root / ATTESTATION.relative_to(LAB)


def test_a_complete_attestation_passes_and_a_changed_file_fails_it(tmp_path):
    root, path = lab_copy(tmp_path)
    data = json.loads(path.read_text())
    data["gates"] = {g: True for g in data["gates"]}
    data["quality_evidence"][1]["supports"] = [g for g in data["gates"]
                                               if g not in data["quality_evidence"][0]["supports"]]
    path.write_text(json.dumps(data))
    assert judge_lab_attestation(path, root).passed
    log = root / data["quality_evidence"][0]["path"]
    log.write_text(log.read_text() + "DIFFERS lines: 1\n")
    assert judge_lab_attestation(path, root).failures == ["quality_evidence_0_hash_mismatch"]
    other = root / "other.json"
    other.write_text("{}")
    assert "performance_evidence_path_mismatch" in judge_lab_attestation(
        path, root, other).failures


def test_an_attestation_reads_nothing_outside_its_repository(tmp_path):
    root, path = lab_copy(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("not the lab's")
    data = json.loads(path.read_text())
    data["quality_evidence"][0]["path"] = "../secret.txt"
    data["quality_evidence"][0]["sha256"] = hashlib.sha256(secret.read_bytes()).hexdigest()
    data["performance_evidence"]["path"] = str(secret)
    path.write_text(json.dumps(data))
    failures = judge_lab_attestation(path, root).failures
    assert "quality_evidence_0_outside_repository" in failures
    assert "performance_evidence_path_outside_repository" in failures


def test_the_cli_judges_the_lab_file_and_exits_1(cli, monkeypatch):
    monkeypatch.chdir(LAB)
    result = cli("promote", "--lab", ATTESTATION, "--json")
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["passed"] is False and out["exit_code"] == 1
    assert cli("promote").exit_code == 4  # neither a record nor --lab


def test_a_real_record_is_judged_gate_by_gate_and_signed(store_home, cli, hash_cache):
    from registry.contracts.bindings import set_teacher
    from registry.seal import seal_run
    from registry.store.verifications import verifications_of

    run = ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv"
    recipe = ROOT / "recipes" / "tiny-bf16-kv.toml"
    first = seal_run(run, home=store_home, recipe_path=recipe).id
    set_teacher(store_home, first, "tiny-bf16-exact")
    rid = seal_run(run, home=store_home, recipe_path=recipe).id
    result = cli("promote", rid[:12], "--json")
    assert result.exit_code == 1, result.stderr
    done = json.loads(result.stdout)
    gates = {g["gate"]: g for g in done["gates"]}
    final = gates["realistic_final_gate"]
    # the tiny suite: 8 prompts, a 128-token cap and ignore_eos, no classes
    assert not final["passed"]
    for code in ("fixed_suite_has_fewer_than_12_prompts", "max_tokens_must_equal_512",
                 "ignore_eos_must_be_disabled", "fixed_suite_lacks_varied_prompt_classes"):
        assert code in final["detail"]
    assert gates["exact_or_target_oracle_passed"]["passed"], gates
    assert gates["exact_or_target_oracle_passed"]["evidence"]["teacher"] == f"record:{first}"
    assert not gates["fresh_server_repeat_passed"]["passed"]
    assert "no passed reproduction" in gates["fresh_server_repeat_passed"]["detail"]
    assert not gates["deterministic_repeats_passed"]["passed"]
    [stored] = [v for v in verifications_of(store_home, rid)
                if v.statement.predicate.policy.name == "promotion"]
    assert stored.id == done["verification"]
    checks = {c.name: c.result.value for c in stored.statement.predicate.checks}
    assert checks["realistic_final_gate"] == "FAILED"
    assert stored.statement.predicate.result.value == "FAILED"
    bench = next(s for s in stored.statement.subject if s.name.endswith("/bench.json"))
    assert bench.name.startswith("evidence:")

