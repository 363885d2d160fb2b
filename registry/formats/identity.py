"""The resolved identity: every identity field with its declared value, the value
proven from evidence, a status, the rule that decided and the evidence itself.

Field names are a shared contract between the resolver, seal, the index, diff and
reproduce: add names here, never rename them.
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from registry.base.model import Frozen, empty_list


class Status(StrEnum):
    confirmed = "confirmed"  # declared and proven equal
    mismatch = "mismatch"  # declared, and the evidence says otherwise
    unresolved = "unresolved"  # no evidence decides it: never guessed
    undeclared = "undeclared"  # proven, but the recipe did not declare it


class Kind(StrEnum):
    """How a difference in the field matters (used by diff)."""

    identity = "identity"  # changes what is computed
    performance = "performance"  # a knob: changes speed or capacity, not the math
    environment = "environment"  # host, drivers, paths


# name -> (kind, meaning). The resolver fills these; more may be added.
FIELDS: dict[str, tuple[Kind, str]] = {
    "engine.name": (Kind.identity, "serving engine"),
    "engine.version": (Kind.identity, "version banner (self-reported; stale on source builds)"),
    "engine.commit": (Kind.identity, "engine source tree commit"),
    "model.path": (Kind.environment, "checkpoint location on the host"),
    "model.revision": (Kind.identity, "checkpoint revision"),
    "model.manifest_sha256": (Kind.identity, "digest of the checkpoint's release files"),
    "model.architecture": (Kind.identity, "target architecture"),
    "draft.architecture": (Kind.identity, "draft architecture"),
    "draft.revision": (Kind.identity, "draft checkpoint revision"),
    "draft.manifest_sha256": (Kind.identity, "digest of the draft checkpoint's release files"),
    "spec.method": (Kind.identity, "speculative decoding method"),
    "spec.num_tokens": (Kind.identity, "speculative tokens per draft cycle"),
    "precision.dtype": (Kind.identity, "model / activation dtype"),
    "precision.weights": (Kind.identity, "target weight quantization method and scheme"),
    "precision.activations": (Kind.identity, "what the target's quantized matmuls take as input: "
                              "fp8 / int8 when activations are quantized, else the model dtype"),
    "precision.draft_weights": (Kind.identity, "draft weight format"),
    "precision.kv_cache": (Kind.identity, "effective target KV-cache storage format"),
    "precision.kv_scales": (Kind.identity, "KV scale source"),
    "precision.draft_kv_cache": (Kind.identity, "effective draft KV-cache storage format"),
    "parallel.tensor": (Kind.identity, "tensor-parallel size"),
    "parallel.pipeline": (Kind.identity, "pipeline-parallel size"),
    "parallel.data": (Kind.identity, "data-parallel size"),
    "parallel.expert": (Kind.identity, "expert-parallel size (1 = off)"),
    "graph.compilation_mode": (Kind.performance, "torch.compile mode"),
    "graph.cudagraph_mode": (Kind.performance, "graph capture mode"),
    "graph.capture_sizes": (Kind.performance, "graph capture batch sizes"),
    "attention.backend": (Kind.identity, "attention backend"),
    "runtime.max_model_len": (Kind.performance, "context limit"),
    "runtime.block_size": (Kind.performance, "KV block size in tokens"),
    "runtime.max_num_seqs": (Kind.performance, "concurrent sequences"),
    "runtime.max_num_batched_tokens": (Kind.performance, "tokens per scheduler step"),
    "runtime.prefix_caching": (Kind.performance, "prefix caching enabled"),
    "runtime.async_scheduling": (Kind.performance, "asynchronous scheduling enabled"),
    "runtime.gpu_memory_utilization": (Kind.performance, "memory fraction for the engine"),
    "runtime.device": (Kind.environment, "device type the engine ran on"),
    "kv.capacity_tokens": (Kind.performance, "KV cache size in tokens"),
    "kv.max_concurrency": (Kind.performance, "maximum concurrency at max_model_len"),
    "kv.memory_gib": (Kind.performance, "KV cache memory (per rank)"),
    "env.unknown_vllm_vars": (Kind.environment, "VLLM_* variables the engine did not recognise"),
    # a containerized engine (docs/containers.md): the image is the software that ran
    "container.image_digest": (Kind.identity, "the image's manifest digest"),
    "container.image_id": (Kind.identity, "the image id (its config digest)"),
    "container.image_created": (Kind.environment, "the image's created time"),
    "container.runtime": (Kind.environment, "podman or docker"),
    "container.runtime_version": (Kind.environment, "the container runtime's version"),
    "launcher.sha256": (Kind.identity, "the launcher script that started the engine"),
    # llama.cpp (docs/engines.md): K and V are separate types, per cache
    "precision.kv_cache_k": (Kind.identity, "K cache type of the target's (full) cache"),
    "precision.kv_cache_v": (Kind.identity, "V cache type of the target's (full) cache"),
    "precision.swa_kv_cache_k": (Kind.identity, "K type of the sliding-window cache"),
    "precision.swa_kv_cache_v": (Kind.identity, "V type of the sliding-window cache"),
    "precision.draft_kv_cache_k": (Kind.identity, "K type of the draft's cache"),
    "precision.draft_kv_cache_v": (Kind.identity, "V type of the draft's cache"),
    "runtime.ctx_size": (Kind.performance, "context cells (llama_context n_ctx)"),
    "runtime.n_ctx_seq": (Kind.performance, "context per sequence (slot)"),
    "runtime.n_parallel": (Kind.performance, "server slots"),
    "runtime.batch_size": (Kind.performance, "logical batch (n_batch)"),
    "runtime.ubatch_size": (Kind.performance, "physical batch (n_ubatch)"),
    "runtime.flash_attn": (Kind.identity, "flash attention as run (on / off)"),
    "runtime.n_gpu_layers": (Kind.performance, "layers offloaded to the GPU"),
    "parallel.split_mode": (Kind.identity, "how the model is split across devices"),
    "parallel.devices": (Kind.identity, "devices holding model buffers"),
    "spec.n_max": (Kind.identity, "most draft tokens per step"),
    "spec.n_min": (Kind.identity, "fewest draft tokens per step"),
    "kv.cells": (Kind.performance, "cells of the target's full-attention cache"),
    "kv.k_mib": (Kind.performance, "K buffer of that cache (MiB)"),
    "kv.v_mib": (Kind.performance, "V buffer of that cache (MiB)"),
    "kv.swa_cells": (Kind.performance, "cells of the sliding-window cache"),
    "kv.swa_k_mib": (Kind.performance, "K buffer of the sliding-window cache (MiB)"),
    "kv.swa_v_mib": (Kind.performance, "V buffer of the sliding-window cache (MiB)"),
    "platform.device": (Kind.environment, "the accelerator's name as printed"),
    "timing.requests": (Kind.performance, "completed requests in the log"),
    "timing.first_prompt_tps": (Kind.performance, "first request's prompt tokens/s (log)"),
    "timing.first_eval_tps": (Kind.performance, "first request's decode tokens/s (log)"),
    "timing.first_draft_acceptance": (Kind.performance, "first draft acceptance (log)"),
    "timing.mean_eval_tps": (Kind.performance, "mean of the log's per-request decode t/s"),
    # llama-perplexity: a quality figure of the model at the run's context, never a speed
    "quality.perplexity": (Kind.performance, "final perplexity estimate (lower is better)"),
    "quality.perplexity_error": (Kind.performance, "that estimate's +/- (standard error)"),
    "quality.perplexity_chunks": (Kind.performance, "chunks the perplexity was computed over"),
}

# Always shown side by side in a diff, even when equal.
PRECISION_AXES = (
    "precision.weights", "precision.activations", "precision.draft_weights", "precision.dtype",
    "precision.kv_cache", "precision.kv_scales", "precision.draft_kv_cache",
)


def kind_of(name: str) -> Kind:
    return FIELDS[name][0] if name in FIELDS else Kind.environment


class Evidence(Frozen):
    """One fact with its source: a log line, a file digest, a computed figure."""

    source: str = Field(description="file name within the run, or checkpoint file")
    line: int | None = Field(None, description="1-based line number in `source`")
    text: str | None = Field(None, description="the matched text, or the computation")


class ResolvedField(Frozen):
    declared: Any = None
    resolved: Any = None
    status: Status
    rule: str | None = Field(None, description="which rule decided the resolved value")
    evidence: list[Evidence] = Field(default_factory=empty_list)
    self_reported: bool = Field(False, description="the engine says so about itself")
    note: str | None = None


CHECK_FAILED = "cross-check failed"  # a note saying so: the views show it beside the value
_FAILED = (CHECK_FAILED, "it fits no single element size")  # the second: older records


def failed_check(field: ResolvedField | None) -> str | None:
    """The note of a cross-check that ran and failed (not one that could not run)."""
    note = field.note if field else None
    return note if note and any(m in note for m in _FAILED) else None


def status_for(declared: Any, resolved: Any) -> Status:
    if resolved is None:
        return Status.unresolved
    if declared is None:
        return Status.undeclared
    return Status.confirmed if declared == resolved else Status.mismatch


class ExpectResult(Frozen):
    """A recipe's runtime marker, counted per rank in the engine log."""

    name: str
    pattern: str
    expected_count: int
    at_least: bool = False
    ranks_expected: int
    counts: dict[str, int] = Field(description="rank label -> matching lines")
    values: dict[str, list[str]] = Field(default_factory=dict, description="group -> values seen")
    expected_values: dict[str, str] = Field(default_factory=dict)
    passed: bool
    detail: str
    evidence: list[Evidence] = Field(default_factory=empty_list)


class SpecDecodeStats(Frozen):
    """Speculative decoding acceptance, from /metrics counter differences (totals) or,
    failing that, the sum of the log's interval lines."""

    source: str = Field(description="metrics or log")
    drafts: int | None = None
    draft_tokens: int
    accepted_tokens: int
    per_position_accepted: list[int] = Field(default_factory=empty_list)
    acceptance_rate: float = Field(description="accepted / draft tokens")
    emitted_per_cycle: float | None = Field(None, description="(accepted + drafts) / drafts")


class ResolvedIdentity(Frozen):
    schema_: str = Field("registry.resolved-identity/v1", alias="schema")
    fields: dict[str, ResolvedField]
    expect: list[ExpectResult] = Field(default_factory=empty_list)
    spec_decode: SpecDecodeStats | None = None
    kv_usage_peak: float | None = Field(None, description="peak KV usage percent in the log")
    errors: list[Evidence] = Field(default_factory=empty_list, description="error lines in the log")
    notes: list[str] = Field(default_factory=empty_list, description="what the reader should know")


    def value(self, name: str) -> Any:
        field = self.fields.get(name)
        return field.resolved if field else None

    def mismatches(self) -> list[str]:
        return sorted(n for n, f in self.fields.items() if f.status is Status.mismatch)
