"""The KV precision fields: gathers what `kv.py` decides from and runs the capacity check."""

from __future__ import annotations

from registry.engines.vllm.logs.messages import Kind
from registry.engines.vllm.resolve import kv
from registry.engines.vllm.resolve.capacity import (
    CapacityCheck,
    Layout,
    NotModelled,
    check_capacity,
    layer_windows,
)
from registry.engines.vllm.resolve.fields import Fields
from registry.formats.identity import Evidence
from registry.resolve.inputs import Checkpoints

DEFAULT_BLOCK = {"cpu": 128}  # vLLM 0.32 platform defaults; every other platform: 16
ASYNC_DOUBLES_FROM = (0, 32)  # the first release known to reserve two batches (its source)


def kv_fields(f: Fields, checkpoints: Checkpoints) -> None:
    capacity, why_not = _capacity(f, checkpoints)
    requested, requested_ev = f.log.setting("kv_cache_dtype")
    dtype_line = f.log.first(Kind.kv_dtype)
    stated = dtype_line.values["dtype"] if dtype_line else None
    if requested is None and stated not in (None, "fp8"):  # bare fp8: e4m3 or e5m2 (old builds)
        requested, requested_ev = stated, f.log.evidence(dtype_line) if dtype_line else None
    quantization, quantization_ev = f.log.setting("quantization")
    inputs = kv.KVInputs(
        requested=requested, requested_evidence=requested_ev,
        unquantized=quantization_ev is not None and quantization is None,
        dynamic_scales=bool(f.log.arg("calculate_kv_scales")[0]) if f.log.args_fact else None,
        model_dtype=f.out["precision.dtype"].resolved, checkpoint=checkpoints.target,
        version=f.out["engine.version"].resolved,
        dtype_line=f.log.evidence(dtype_line) if dtype_line else None,
        capacity=capacity, capacity_note=why_not, quantization=quantization,
        quantization_evidence=quantization_ev,
    )
    target, decision = kv.kv_cache_field(inputs, f.declared.get("precision.kv_cache"))
    f.out["precision.kv_cache"] = target
    scale_line = f.log.first(Kind.kv_scale_default)
    f.out["precision.kv_scales"] = kv.kv_scales_field(
        inputs, decision.value, f.log.evidence(scale_line) if scale_line else None)
    if f.log.speculative.get("model"):
        spec_args, ev = f.log.arg("speculative_config")
        own = spec_args.get("kv_cache_dtype") if isinstance(spec_args, dict) else None
        f.out["precision.draft_kv_cache"] = kv.draft_kv_field(
            target, own, ev, f.declared.get("precision.draft_kv_cache"))


def _capacity(f: Fields, checkpoints: Checkpoints) -> tuple[CapacityCheck | None, str | None]:
    target = checkpoints.target
    if target is None:
        return None, "no checkpoint shape to compute bytes per token from"
    tokens = f.out["kv.capacity_tokens"]
    memory, memory_ev = _memory(f)
    if tokens.resolved is None or memory is None:
        return None, "the log reports no KV capacity or no KV memory"
    try:
        layout = _layout(f)
        draft_method = f.log.speculative.get("method")
        if f.log.speculative.get("model") and checkpoints.draft is None:
            raise NotModelled("the draft shares the cache, and its checkpoint was not inspected")
        windows = layer_windows(target.attention, checkpoints.draft.attention
                                if checkpoints.draft else None, draft_method,
                                hybrid_manager=f.log.first(Kind.hybrid_disabled) is None)
        check = check_capacity(windows, target.attention, layout, tokens.resolved, memory,
                               [*tokens.evidence, *memory_ev])
    except NotModelled as e:
        return None, str(e)
    summary = Evidence(source="capacity", text=check.summary())
    return check.model_copy(update={"evidence": [*check.evidence, summary]}), None


def _memory(f: Fields) -> tuple[float | None, list[Evidence]]:
    """KV memory per rank: the smallest rank's when every rank reports it (vLLM sizes the
    cache by the smallest), else what the log reports."""
    per_rank = f.log.all(Kind.kv_memory_in_use)
    if per_rank:
        smallest = min(per_rank, key=lambda fact: float(fact.values["gib"]))
        return float(smallest.values["gib"]), [f.log.evidence(
            fact, f"({fact.proc}) Current kv cache memory in use is {fact.values['gib']} GiB")
            for fact in per_rank]
    field = f.out["kv.memory_gib"]
    return field.resolved, list(field.evidence)


def _layout(f: Fields) -> Layout:
    def value(name: str) -> object:
        return f.out[name].resolved if name in f.out else None

    tp, pp, mml = value("parallel.tensor"), value("parallel.pipeline"), value(
        "runtime.max_model_len")
    if not isinstance(tp, int) or not isinstance(mml, int):
        raise NotModelled("tensor-parallel size or max_model_len unresolved")
    if pp not in (1, None):
        raise NotModelled("pipeline parallelism splits layers across ranks (not modelled)")
    block = value("runtime.block_size")
    if not isinstance(block, int):
        block = DEFAULT_BLOCK.get(str(value("runtime.device")), 16)
    batched, asynchronous = value("runtime.max_num_batched_tokens"), value(
        "runtime.async_scheduling")
    in_flight = in_flight_tokens(value("engine.version"), batched, asynchronous) \
        if isinstance(batched, int) and isinstance(asynchronous, bool) else None
    return Layout(tp=tp, block_size=block, max_model_len=mml, in_flight_tokens=in_flight)


def in_flight_tokens(version: object, batched: int, asynchronous: bool) -> int:
    """The tokens a sliding-window group holds beyond its window, per the engine version's
    allocator. vLLM 0.32 reserves `max_concurrent_batches * max_num_batched_tokens`
    (`VllmConfig.max_in_flight_tokens`: two batches under async scheduling); vLLM 0.25.0
    reserves one batch whatever the scheduling (the H200 hybrid run's 3,512,906 tokens
    fit it to 0.9999, and a doubled batch misses by 1.224). A source build's banner
    says nothing: it is read as the newer rule."""
    release = kv.release(str(version)) if isinstance(version, str) else None
    doubles = asynchronous and (release is None or release >= ASYNC_DOUBLES_FROM)
    return batched * (2 if doubles else 1)
