"""The resolver on real vLLM CPU runs of the tiny lanes (`cpu_run` starts the engine).

Expected values are re-derived from the raw run: the log's own config line, the
checkpoint's files, the `/metrics` scrapes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from registry.formats.identity import ResolvedIdentity, Status
from registry.resolve import resolve_run

pytestmark = pytest.mark.engine


def config_says(run_dir: Path, key: str) -> str:
    line = next(line for line in (run_dir / "server.log").read_text().splitlines()
                if "Initializing a V1 LLM engine" in line)
    return line.split(f"{key}=", 1)[1].split(",", 1)[0]


def capacity(r: ResolvedIdentity) -> str:
    kv = r.fields["precision.kv_cache"]
    return next(e.text or "" for e in kv.evidence if e.source == "capacity")


def scale_tensors(model: Path) -> int:
    header = (model / "model.safetensors").read_bytes()
    size = int.from_bytes(header[:8], "little")
    names = json.loads(header[8:8 + size])
    return sum(1 for name in names if name.endswith(("k_scale", "v_scale")))


def test_bf16_kv(cpu_run) -> None:
    r = resolve_run(cpu_run("tiny-bf16-kv"))
    kv = r.fields["precision.kv_cache"]
    assert (kv.resolved, kv.status) == ("bfloat16", Status.confirmed)
    assert "capacity agrees (2-byte elements)" in (kv.rule or "")
    assert r.value("precision.kv_scales") == "n/a" and r.mismatches() == []


def test_explicit_fp8_e4m3(cpu_run) -> None:
    run_dir = cpu_run("tiny-fp8-kv")
    r = resolve_run(run_dir)
    assert config_says(run_dir, "kv_cache_dtype") in ("fp8", "fp8_e4m3")
    kv = r.fields["precision.kv_cache"]
    assert (kv.resolved, kv.status) == ("fp8_e4m3", Status.confirmed)
    assert "1-byte" in (kv.rule or "")
    assert r.value("precision.kv_scales") == "uncalibrated (1.0)"


def test_checkpoint_scheme_under_auto_is_calibrated_fp8(cpu_run, tiny_models: Path) -> None:
    run_dir = cpu_run("tiny-checkpoint-kv")
    assert config_says(run_dir, "kv_cache_dtype") == "auto"  # every log line says auto
    r = resolve_run(run_dir)
    kv = r.fields["precision.kv_cache"]
    assert (kv.declared, kv.resolved, kv.status) == ("checkpoint", "fp8_e4m3", Status.confirmed)
    assert "kv_cache_scheme" in (kv.rule or "") and "1-byte" in (kv.rule or "")
    assert "1-byte" in capacity(r)
    scalars = scale_tensors(tiny_models / "tiny-llama-kv-fp8")
    assert scalars == 8  # one k and one v scale for each of the 4 layers
    assert r.value("precision.kv_scales") == f"calibrated ({scalars} scalars from checkpoint)"


def test_same_checkpoint_explicit_bf16_wins_on_0_32(cpu_run) -> None:
    r = resolve_run(cpu_run("tiny-checkpoint-kv-bf16"))
    kv = r.fields["precision.kv_cache"]
    assert (kv.resolved, kv.status) == ("bfloat16", Status.confirmed)
    assert "vLLM >= 0.22" in (kv.rule or "") and "capacity agrees (2-byte" in (kv.rule or "")
    assert r.value("precision.kv_scales") == "n/a"


def test_ngram_acceptance_from_the_counters(cpu_run) -> None:
    run_dir = cpu_run("tiny-ngram")
    r = resolve_run(run_dir)
    assert (r.value("spec.method"), r.value("spec.num_tokens")) == ("ngram", 3)
    assert "precision.draft_kv_cache" not in r.fields  # model-free drafts have no cache

    def total(name: str, file: str) -> float:
        text = (run_dir / file).read_text()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(name + "{"))

    def grew(name: str) -> float:
        return total(name, "metrics-after.prom") - total(name, "metrics-before.prom")

    spec = r.spec_decode
    assert spec is not None and spec.source == "metrics"
    drafts = grew("vllm:spec_decode_num_drafts_total")
    accepted = grew("vllm:spec_decode_num_accepted_tokens_total")
    tokens = grew("vllm:spec_decode_num_draft_tokens_total")
    assert drafts > 0 and (spec.drafts, spec.accepted_tokens, spec.draft_tokens) == (
        drafts, accepted, tokens)
    assert spec.emitted_per_cycle == pytest.approx((accepted + drafts) / drafts)
    assert len(spec.per_position_accepted) == 3


def test_hybrid_sliding_capacity_follows_the_engine_pooling(cpu_run) -> None:
    """The engine reserves each sliding layer's window plus the scheduled tokens, so here
    (window 128, 1,024 scheduled, max_model_len 1,024) sliding layers cost as much as
    global ones. Capping them at their window would read the capacity as a new dtype."""
    run_dir = cpu_run("tiny-hybrid-sliding")
    r = resolve_run(run_dir)
    kv = r.fields["precision.kv_cache"]
    assert (kv.resolved, kv.status) == ("bfloat16", Status.confirmed) and r.mismatches() == []
    assert "2 sliding(128) + 2 full layers" in capacity(r)
    memory = r.value("kv.memory_gib") * 2**30
    naive_per_token = 2 * 2 * 64 * 2 * (2 + 2 * 128 / 1024)  # sliding layers capped at 128
    naive_tokens = memory / naive_per_token
    assert not math.isclose(naive_tokens, r.value("kv.capacity_tokens"), rel_tol=0.25)
