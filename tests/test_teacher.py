"""Teachers, and the bitwise contract on the real Laguna B70 record: its 13 sealed
rows against the lab's two compact oracle files, re-derived here from raw rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from registry.contracts.bitwise import bitwise_teacher
from registry.contracts.teacher import AXES, Teacher, teacher_from_lab_oracles, teacher_from_rows
from registry.errors import InvalidInput
from registry.formats.rundir import BenchRow
from registry.formats.verdict import VerdictStatus
from tests.conftest import FIXTURES, ROOT

CAPSULE = FIXTURES / "laguna-b70-record"
TOKEN_ORACLE = CAPSULE / "teacher-token-oracle-v1.json"
TEXT_ORACLE = CAPSULE / "teacher-text-sha256-v1.json"
LANE = "laguna-s21-exact-short-decode"
# The record lane's binding axes (BF16 KV: the record forced it over the checkpoint's FP8).
LAB_AXES = {
    "precision.weights": "int4-w4a16",
    "precision.draft_weights": "fp8-w8a16",
    "precision.kv_cache": "bfloat16",
    "precision.kv_scales": "n/a",  # the resolver's word for an unquantized cache
    "model.revision": "4bbfc285f2f8b3b6b526274c133b7b17aae6c8cb",
    "suite.sha256": "9fdaacfdc4de59407a73cbe0d8130fa0f6abe91fed782e399a58adbc035ea638",
}


def capsule_rows() -> list[BenchRow]:
    """The sealed record run's raw rows, as the executor would have written them."""
    data = json.loads((CAPSULE / "evidence/record-run/bench.json").read_text())
    return [BenchRow(suite="realistic-cold-v1", index=r["prompt_index"], prompt_id=r["prompt_id"],
                     prompt_sha256=r["prompt_sha256"], prompt_tokens=r["prompt_tokens"],
                     cached_tokens=r["cached_tokens"], completion_tokens=r["completion_tokens"],
                     token_ids=r["token_ids"], token_times_s=r["token_id_offsets_s"],
                     text_sha256=r["sha256"]) for r in data["rows"]]


def lab_teacher() -> Teacher:
    return teacher_from_lab_oracles(TOKEN_ORACLE, TEXT_ORACLE, LAB_AXES, lane=LANE)


def tampered(rows: list[BenchRow], index: int, position: int) -> list[BenchRow]:
    """One token id changed in one row; everything else (incl. its text digest) kept."""
    row = rows[index]
    ids = list(row.token_ids)
    ids[position] += 1
    return [*rows[:index], row.model_copy(update={"token_ids": ids}), *rows[index + 1:]]


def test_import_binds_the_oracles_to_their_source() -> None:
    teacher = lab_teacher()
    assert len(teacher.rows) == 13
    assert teacher.source.kind == "lab-oracles"
    oracle = json.loads(TOKEN_ORACLE.read_text())
    assert teacher.source.ref == oracle["source_sha256"]
    assert set(teacher.source.files) == {TOKEN_ORACLE.name, TEXT_ORACLE.name}
    assert teacher.suite_sha256 == LAB_AXES["suite.sha256"]
    assert [r.prompt_id for r in teacher.rows] == [r["prompt_id"] for r in oracle["rows"]]


def test_record_rows_are_exact_against_the_lab_teacher() -> None:
    verdict = bitwise_teacher(capsule_rows(), lab_teacher(), LAB_AXES, max_tokens=512)
    assert verdict.status is VerdictStatus.passed, verdict.reasons
    assert (verdict.rows_passed, verdict.rows_total) == (13, 13)
    assert all(r.checks["cached_zero"] and r.checks["text_sha256_equal"] for r in verdict.rows)
    checks = {c.name: c for c in verdict.checks}
    assert checks["longest prompt exact"].detail.startswith(
        "row 12 (long-rollover-repository-audit, 863 prompt tokens) exact")
    assert checks["long response then next exact"].detail == (
        "row 0 (python-lru-cache, 512 tokens) exact, next row 1 (python-debug-window) exact")


def test_a_tampered_row_fails_although_the_stored_report_says_exact() -> None:
    stored = json.loads((CAPSULE / "evidence/record-run/exactness-vs-q1.json").read_text())
    assert stored["all_exact"] is True  # the stored boolean, never read by the contract
    rows = capsule_rows()
    verdict = bitwise_teacher(tampered(rows, 7, 200), lab_teacher(), LAB_AXES, max_tokens=512)
    assert verdict.status is VerdictStatus.failed
    bad = [r for r in verdict.rows if not r.passed]
    assert [r.index for r in bad] == [7]
    assert bad[0].first_diff.model_dump() == {
        "index": 200, "expected": rows[7].token_ids[200], "actual": rows[7].token_ids[200] + 1}
    assert bad[0].checks["text_sha256_equal"]  # the digest alone would not have caught it
    assert verdict.reasons[0] == (
        f"row 7 (rust-stream-parser): token ids differ at output index 200: "
        f"expected {rows[7].token_ids[200]}, actual {rows[7].token_ids[200] + 1}")
    assert "all rows exact: 12/13 rows exact" in verdict.reasons


def test_tampering_the_long_row_fails_its_aggregate_checks() -> None:
    verdict = bitwise_teacher(tampered(capsule_rows(), 0, 511), lab_teacher(), LAB_AXES,
                              max_tokens=512)
    failed = {c.name for c in verdict.checks if not c.passed}
    assert failed == {"all rows exact", "long response then next exact"}


def test_fp8_kv_run_is_refused_naming_the_axis() -> None:
    run_axes = {**LAB_AXES, "precision.kv_cache": "fp8_e4m3"}
    verdict = bitwise_teacher(capsule_rows(), lab_teacher(), run_axes)
    assert verdict.status is VerdictStatus.refused
    assert verdict.rows == []
    assert verdict.reasons == [
        "precision.kv_cache bfloat16 vs fp8_e4m3: Never use BF16 token hashes as an expected "
        "FP8 bitwise gate; judge this run by its own teacher, self-consistency or semantic gates"]


def test_every_differing_axis_is_named_with_both_values() -> None:
    run_axes = {**LAB_AXES, "model.revision": "0" * 40, "suite.sha256": "f" * 64,
                "precision.kv_scales": "calibrated"}
    reasons = bitwise_teacher(capsule_rows(), lab_teacher(), run_axes).reasons
    assert [r.split(" ")[0] for r in reasons] == [
        "precision.kv_scales", "model.revision", "suite.sha256"]
    assert reasons[0].startswith("precision.kv_scales n/a vs calibrated:")
    assert reasons[1] == f"model.revision {LAB_AXES['model.revision']} vs {'0' * 40}: " \
                         "the teacher ran another checkpoint revision"


def test_no_teacher_is_a_refusal() -> None:
    verdict = bitwise_teacher(capsule_rows(), None, LAB_AXES)
    assert verdict.status is VerdictStatus.refused
    assert "registry teacher set" in verdict.reasons[0]


def test_teacher_from_rows_round_trips_through_json() -> None:
    rows = capsule_rows()
    teacher = teacher_from_rows(LANE, rows, LAB_AXES, lab_teacher().source)
    again = Teacher.model_validate_json(teacher.model_dump_json(by_alias=True))
    assert again == teacher
    assert bitwise_teacher(rows, again, LAB_AXES, max_tokens=512).status is VerdictStatus.passed


def test_teacher_needs_complete_rows() -> None:
    rows = capsule_rows()
    broken = [*rows[:3], rows[3].model_copy(update={"text_sha256": None}), *rows[4:]]
    with pytest.raises(InvalidInput, match=r"row 3 \(concurrency-review\) cannot be a reference"):
        teacher_from_rows(LANE, broken, LAB_AXES, lab_teacher().source)


def test_teacher_must_name_every_axis() -> None:
    axes = {k: v for k, v in LAB_AXES.items() if k != "precision.kv_scales"}
    with pytest.raises(InvalidInput, match="axes must name exactly") as e:
        teacher_from_lab_oracles(TOKEN_ORACLE, TEXT_ORACLE, axes, lane=LANE)
    assert all(a in e.value.hint for a in AXES)


def _copies(tmp_path: Path) -> tuple[Path, Path]:
    tokens, texts = tmp_path / TOKEN_ORACLE.name, tmp_path / TEXT_ORACLE.name
    shutil.copy(TOKEN_ORACLE, tokens)
    shutil.copy(TEXT_ORACLE, texts)
    return tokens, texts


def test_oracles_from_different_teacher_runs_are_rejected(tmp_path: Path) -> None:
    tokens, texts = _copies(tmp_path)
    data = json.loads(texts.read_text())
    data["source_sha256"] = "0" * 64
    texts.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match="come from different teacher runs"):
        teacher_from_lab_oracles(tokens, texts, LAB_AXES, lane=LANE)


def test_oracles_covering_different_prompts_are_rejected(tmp_path: Path) -> None:
    tokens, texts = _copies(tmp_path)
    data = json.loads(texts.read_text())
    data["rows"] = data["rows"][:-1]
    texts.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match=r"cover different prompts: \[\(12, "):
        teacher_from_lab_oracles(tokens, texts, LAB_AXES, lane=LANE)


@pytest.mark.parametrize(("content", "problem"), [
    (None, "missing"),
    ("{not json", "not valid JSON"),
    ('{"source_sha256": "x", "rows": [{"prompt_index": 0}]}',
     r"rows\.0\.prompt_id: Field required"),
])
def test_a_broken_oracle_file_is_one_clear_error(tmp_path: Path, content: str | None,
                                                 problem: str) -> None:
    tokens, texts = _copies(tmp_path)
    if content is None:
        tokens.unlink()
    else:
        tokens.write_text(content)
    with pytest.raises(InvalidInput, match=problem):
        teacher_from_lab_oracles(tokens, texts, LAB_AXES, lane=LANE)


def test_a_teacher_belongs_to_the_kernel_that_made_it(store_home, hash_cache):
    """A record's teacher binds its attention backend and graph mode: the same rows from
    another kernel are refused (regenerate the oracle there), never judged exact."""
    from registry.contracts.bindings import get_teacher, set_teacher
    from registry.contracts.bitwise import bitwise_teacher
    from registry.contracts.sealed import load_sealed
    from registry.contracts.teacher import KERNEL_AXES, binding_axes, kernel_axes
    from registry.seal import seal_run

    run = ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv"
    rid = seal_run(run, home=store_home, recipe_path=ROOT / "recipes" / "tiny-bf16-kv.toml").id
    set_teacher(store_home, rid, "tiny-bf16-exact")
    teacher = get_teacher(store_home, "tiny-bf16-exact")
    sealed = load_sealed(store_home, rid)
    assert teacher is not None and teacher.kernel is not None
    assert set(teacher.kernel) == set(KERNEL_AXES)
    assert teacher.kernel["attention.backend"] == sealed.identity.value("attention.backend")
    axes = binding_axes(sealed.identity, teacher.axes["suite.sha256"])
    rows = sealed.bench.rows
    same = bitwise_teacher(rows, teacher, axes, run_kernel=kernel_axes(sealed.identity))
    assert same.status.value == "passed"
    other = {**kernel_axes(sealed.identity), "attention.backend": "FLASH_ATTN"}
    refused = bitwise_teacher(rows, teacher, axes, run_kernel=other)
    assert refused.status.value == "refused"
    assert any("attention.backend" in r and "another kernel" in r for r in refused.reasons)
    unbound = teacher.model_copy(update={"kernel": None})  # a lab oracle names no kernel
    assert bitwise_teacher(rows, unbound, axes, run_kernel=other).status.value == "passed"
