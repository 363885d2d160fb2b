"""The resolver on the real lab record and log: the figures the issue lists, the
capacity cross-check on real numbers, and what must stay unresolved."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from registry.formats.identity import Status
from registry.resolve import resolve_run
from tests.conftest import FIXTURES, ROOT

RUN = FIXTURES / "laguna-b70-record/evidence/record-run"
QWEN_LOG = FIXTURES / "xpu-logs/qwen-27b-fp8-weights-tp2-server.log"
RECIPE = ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml"
TARGET = ROOT / "identities/checkpoints/laguna-s-2.1-int4.config.json"
DRAFT = ROOT / "identities/checkpoints/laguna-s-2.1-dflash-int4.config.json"
GIB = 1 << 30


def laguna_run(tmp_path: Path, edit: Callable[[str], str] | None = None) -> Path:
    """A copy of the record's run directory, its log edited."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("metrics-before-suite.prom", "metrics-after-suite.prom"):
        shutil.copy(RUN / name, run / name)
    text = (RUN / "server.log").read_text()
    (run / "server.log").write_text(edit(text) if edit else text)
    return run


def prom_total(path: Path, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in path.read_text().splitlines()
               if line.startswith(name + "{"))


def test_laguna_record_resolves_the_published_identity() -> None:
    r = resolve_run(RUN, recipe_path=RECIPE)
    v = r.value
    assert v("precision.kv_cache") == "bfloat16"
    assert "explicit" in (r.fields["precision.kv_cache"].rule or "")
    assert (v("parallel.tensor"), v("parallel.expert")) == (4, 4)
    assert (v("spec.method"), v("spec.num_tokens")) == ("dflash", 11)
    assert (v("graph.cudagraph_mode"), v("graph.capture_sizes")) == ("PIECEWISE", [12])
    assert (v("kv.capacity_tokens"), v("kv.max_concurrency"), v("kv.memory_gib")) == (
        136802, 16.70, 7.57)
    unknown = v("env.unknown_vllm_vars")
    assert len(unknown) == 13 and all(name.startswith("VLLM_XPU_") for name in unknown)
    version = r.fields["engine.version"]
    assert version.self_reported and version.resolved.startswith("0.1.dev1267+g6ae34833d")
    assert "stale" in (version.note or "")
    assert r.mismatches() == []
    assert r.fields["precision.draft_kv_cache"].resolved == "bfloat16"
    assert r.fields["precision.draft_kv_cache"].status is Status.confirmed


def test_laguna_markers_on_every_rank() -> None:
    expect = {e.name: e for e in resolve_run(RUN, recipe_path=RECIPE).expect}
    ranks = {f"Worker_TP{i}_EP{i}": 1 for i in range(4)}
    projections, topology = expect["dflash-fp8-draft-projections"], expect[
        "breakable-graph-topology"]
    assert projections.passed and projections.counts == ranks
    assert projections.values == {"count": ["31"]} and projections.ranks_expected == 4
    assert topology.passed and topology.counts == ranks
    assert topology.values == {"graphs": ["146"], "eager_breaks": ["145"]}
    assert len(topology.evidence) == 4 and all(e.line for e in topology.evidence)


def test_laguna_speculative_decoding_from_the_counters() -> None:
    r = resolve_run(RUN, recipe_path=RECIPE)
    after, before = RUN / "metrics-after-suite.prom", RUN / "metrics-before-suite.prom"

    def diff(name: str) -> float:
        return prom_total(after, name) - prom_total(before, name)

    drafts = diff("vllm:spec_decode_num_drafts_total")
    tokens = diff("vllm:spec_decode_num_draft_tokens_total")
    accepted = diff("vllm:spec_decode_num_accepted_tokens_total")
    spec = r.spec_decode
    assert spec is not None and spec.source == "metrics"
    assert (spec.drafts, spec.draft_tokens, spec.accepted_tokens) == (drafts, tokens, accepted)
    assert spec.acceptance_rate == accepted / tokens
    assert spec.emitted_per_cycle == (accepted + drafts) / drafts
    assert sum(spec.per_position_accepted) == accepted
    usage = [float(m.group(1)) for m in re.finditer(r"KV cache usage: ([\d.]+)%",
                                                     (RUN / "server.log").read_text())]
    assert r.kv_usage_peak == max(usage)


def test_capacity_cross_check_on_the_real_figures() -> None:
    """7.08 GiB on the smallest rank, BF16, hybrid groups (12 global + 6 draft layers in one
    group, 36 sliding in two): the reported 136,802 tokens fit 2-byte elements."""
    r = resolve_run(RUN, recipe_path=RECIPE, checkpoint=TARGET, draft_checkpoint=DRAFT)
    kv = r.fields["precision.kv_cache"]
    assert kv.resolved == "bfloat16" and kv.status is Status.confirmed
    assert "capacity" in (kv.rule or "") and "source-build banner" in (kv.rule or "")
    block = 18 * 64 * 2 * (8 // 4) * 128 * 2  # 18 layers x 64 tokens x K,V x 2 heads x 128 x 2 B
    blocks = int(7.08 * GIB) // block
    per_request = 128 + 2 * 129  # full: 8192/64; sliding: (511 + 8192 capped at 8192)/64 + 1
    predicted = int(blocks / per_request * 8192)
    assert abs(predicted / 136802 - 1) < 0.001
    summary = next(e.text for e in kv.evidence if e.source == "capacity")
    assert f"{predicted:,} tokens" in summary and "groups of 18" in summary
    assert r.value("precision.weights") == "int4-w4a16"
    assert r.fields["precision.weights"].status is Status.confirmed


def test_rules_and_capacity_disagree_is_a_mismatch(tmp_path: Path) -> None:
    """The config line says auto, the checkpoint has a kv_cache_scheme: the rules say FP8,
    the capacity says 2-byte elements. The capacity decides; both are evidence."""
    run = laguna_run(tmp_path, lambda t: t.replace("kv_cache_dtype=bfloat16",
                                                   "kv_cache_dtype=auto"))
    kv = resolve_run(run, checkpoint=TARGET, draft_checkpoint=DRAFT).fields["precision.kv_cache"]
    assert kv.status is Status.mismatch and kv.resolved == "bfloat16"
    assert "not fp8_e4m3" in (kv.rule or "")
    sources = {e.source for e in kv.evidence}
    assert {"server.log", "capacity", str(TARGET)} <= sources


def test_doubled_capacity_is_read_as_fp8(tmp_path: Path) -> None:
    run = laguna_run(tmp_path, lambda t: t.replace("136,802 tokens", "273,604 tokens"))
    kv = resolve_run(run, recipe_path=RECIPE, checkpoint=TARGET,
                     draft_checkpoint=DRAFT).fields["precision.kv_cache"]
    assert kv.resolved == "fp8_e4m3" and kv.status is Status.mismatch
    assert kv.declared == "bfloat16"


def test_without_the_draft_the_capacity_cannot_run_and_the_version_cannot_decide() -> None:
    kv = resolve_run(RUN, recipe_path=RECIPE, checkpoint=TARGET).fields["precision.kv_cache"]
    assert kv.resolved is None and kv.status is Status.unresolved
    assert "draft" in (kv.note or "")


def test_qwen_fp8_weights_never_make_an_fp8_cache(tmp_path: Path) -> None:
    """vLLM reads no KV scheme from an fp8 config (Fp8Config has none; its KV method only
    loads scales for an explicit fp8 cache): `auto` stores the model dtype, the method named
    as the evidence, never the weights' precision."""
    (tmp_path / "server.log").write_bytes(QWEN_LOG.read_bytes())
    r = resolve_run(tmp_path)
    kv = r.fields["precision.kv_cache"]
    assert kv.resolved == "float16" and kv.status is Status.undeclared
    assert "quantization=fp8" in (kv.rule or "") and "auto" in (kv.rule or "")
    assert r.value("precision.weights") == "fp8" and r.value("precision.dtype") == "float16"
    assert r.value("precision.kv_scales") == "n/a"
    assert (r.value("parallel.tensor"), r.value("parallel.expert")) == (2, 1)
    assert (r.value("kv.capacity_tokens"), r.value("kv.memory_gib")) == (59904, 2.0)


def test_a_marker_on_one_rank_of_four_fails(tmp_path: Path) -> None:
    def keep_rank0(text: str) -> str:
        return "\n".join(line for line in text.split("\n") if not (
            "draft projections" in line and "Worker_TP0_EP0" not in line))

    expect = {e.name: e for e in resolve_run(laguna_run(tmp_path, keep_rank0),
                                             recipe_path=RECIPE).expect}
    failed = expect["dflash-fp8-draft-projections"]
    assert not failed.passed and "seen on 1 of 4 rank(s)" in failed.detail
    assert expect["breakable-graph-topology"].passed


def test_a_marker_with_a_wrong_value_fails(tmp_path: Path) -> None:
    run = laguna_run(tmp_path, lambda t: t.replace("graphs=146, eager_breaks=145",
                                                   "graphs=146, eager_breaks=144", 1))
    topology = next(e for e in resolve_run(run, recipe_path=RECIPE).expect
                    if e.name == "breakable-graph-topology")
    assert not topology.passed and "eager_breaks: expected 145, saw 144, 145" in topology.detail


@pytest.mark.parametrize("version, expected, rule", [
    ("0.19.1", "fp8_e4m3", "<= 0.21"), ("0.21.0", "fp8_e4m3", "<= 0.21"),
    ("0.32.1", "bfloat16", ">= 0.22"), ("1.2.0", "bfloat16", ">= 0.22")])
def test_engine_version_rule_table(tmp_path: Path, version: str, expected: str,
                                   rule: str) -> None:
    """A release banner applies the rule table: <= 0.21 the checkpoint scheme overrides an
    explicit value, >= 0.22 (a 1.x release included) the explicit value wins."""
    run = laguna_run(tmp_path, lambda t: t.replace("0.1.dev1267+g6ae34833d.d20260726",
                                                   version))
    kv = resolve_run(run, checkpoint=TARGET).fields["precision.kv_cache"]
    assert kv.resolved == expected
    assert f"vLLM {rule}" in (kv.rule or "")


def test_a_quantization_method_is_never_a_weight_precision() -> None:
    """The captured checkpoint-scheme run logs `quantization=compressed-tensors`, which here
    carries only the KV-cache scheme: without the checkpoint the weights stay unresolved
    (never `compressed-tensors`); with its config they are the model dtype."""
    run = ROOT / "tests" / "data" / "cpu-runs" / "tiny-checkpoint-kv"
    weights = resolve_run(run).fields["precision.weights"]
    assert weights.resolved is None and weights.status is Status.unresolved
    assert "compressed-tensors" in (weights.note or "")
    host = ROOT / "tests" / "data" / "gpu-runs" / "h200x1-20261201"
    ck = host / "logs" / "checkpoints" / "llama-3b-kv-fp8" / "config.json"
    r = resolve_run(host / "runs" / "checkpoint-fp8", checkpoint=ck)
    assert r.value("precision.weights") == "bfloat16" == r.value("precision.dtype")
    assert r.value("precision.kv_cache") == "fp8_e4m3"
