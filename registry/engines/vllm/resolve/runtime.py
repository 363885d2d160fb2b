"""Runtime, KV-report, environment and weight-precision fields."""

from __future__ import annotations

from registry.engines.vllm.logs.messages import Kind
from registry.engines.vllm.resolve.fields import Fields, convert_value
from registry.formats.identity import Evidence
from registry.logs import Fact
from registry.logs.prometheus import Scrape
from registry.resolve.inputs import Checkpoints

CACHE_INFO = "vllm:cache_config_info"


def runtime_fields(f: Fields, after: Scrape | None) -> None:
    _max_model_len(f)
    _block_size(f, after)
    _from_args(f, "runtime.max_num_seqs", "max_num_seqs")
    _batched_tokens(f)
    f.setting("runtime.prefix_caching", "enable_prefix_caching", bool)
    _async_scheduling(f)
    _from_metrics_or_args(f, "runtime.gpu_memory_utilization", "gpu_memory_utilization", float,
                          after)
    f.setting("runtime.device", "device_config")


def _max_model_len(f: Fields) -> None:
    """The config line's max_seq_len, else the engine's own `Using max model len N` or
    the length its concurrency line is computed for, else the requested value."""
    if f.log.setting("max_seq_len")[1] is not None:
        f.setting("runtime.max_model_len", "max_seq_len", int)
        return
    stated = f.log.first(Kind.max_model_len)
    conc = f.log.first(Kind.kv_concurrency) or next(
        (x for x in f.log.all(Kind.kv_capacity) if "len" in x.values), None)
    if stated:
        f.put("runtime.max_model_len", int(stated.values["tokens"]), "`Using max model len` "
              "line", f.log.evidence(stated))
    elif conc:
        f.put("runtime.max_model_len", int(conc.values["len"].replace(",", "")), "the length "
              "the engine's maximum-concurrency line is computed for (max_model_len)",
              f.log.evidence(conc))
    else:
        f.setting("runtime.max_model_len", "max_seq_len", int, requested="max_model_len")


def _block_size(f: Fields, after: Scrape | None) -> None:
    """The engine's own `Setting attention block size to N tokens` (hybrid models: the
    attention page must hold a mamba state) wins over the configured value."""
    lines = f.log.all(Kind.attention_block)
    sizes = {fact.values["tokens"] for fact in lines}
    if len(sizes) > 1:
        f.put("runtime.block_size", None, "workers set different attention block sizes",
              *(f.log.evidence(x) for x in lines))
    elif sizes:
        f.put("runtime.block_size", int(sizes.pop()), "the engine set the attention block size "
              "(hybrid model: an attention page holds a mamba state); the configured value "
              "does not apply", f.log.evidence(lines[0]))
    else:
        _from_metrics_or_args(f, "runtime.block_size", "block_size", int, after)


def _batched_tokens(f: Fields) -> None:
    """The scheduler line printed for the engine's own config: the last one before the
    engine config line (a default config's line may come first, e.g. 2048 before 8192)."""
    lines = f.log.all(Kind.batched_tokens)
    cfg = f.log.config_fact
    if cfg is not None:
        before = [fact for fact in lines if fact.line < cfg.line]
        lines = before[-1:] or lines[:1]
    values = {fact.values["tokens"] for fact in lines}
    if len(values) == 1:
        rule = "chunked-prefill line" + (" (the last before the engine config line)"
                                         if cfg is not None else "")
        f.put("runtime.max_num_batched_tokens", int(values.pop()), rule, f.log.evidence(lines[-1]))
    elif values:
        f.put("runtime.max_num_batched_tokens", None, "chunked-prefill lines disagree and no "
              "engine config line says which is the engine's", *(f.log.evidence(x) for x in lines))
    else:
        _from_args(f, "runtime.max_num_batched_tokens", "max_num_batched_tokens")


def _async_scheduling(f: Fields) -> None:
    sched = f.log.first(Kind.async_scheduling)
    device, device_ev = f.log.setting("device_config")
    if sched:
        f.put("runtime.async_scheduling", sched.values["state"] == "enabled",
              "asynchronous-scheduling line", f.log.evidence(sched))
    elif device == "cpu":
        f.put("runtime.async_scheduling", False, "vLLM 0.32 CPU platform turns asynchronous "
              "scheduling off (silently)", device_ev)
    else:
        _from_args(f, "runtime.async_scheduling", "async_scheduling")


def kv_report_fields(f: Fields) -> None:
    """The capacity the engine reports, as it reports it."""
    cap = _capacity(f)
    conc = cap if cap and "concurrency" in cap.values else next(
        (x for x in f.log.all(Kind.kv_concurrency) if cap is None or x.line > cap.line), None)
    f.put("kv.max_concurrency", float(conc.values["concurrency"]) if conc else None,
          "maximum-concurrency line", f.log.evidence(conc) if conc else None)
    for kind, rule in ((Kind.kv_memory, "Available KV cache memory (rank 0)"),
                       (Kind.kv_memory_cpu, "CPU worker: GiB set for KV cache"),
                       (Kind.kv_memory_explicit, "kv_cache_memory_bytes reservation")):
        fact = f.log.first(kind)
        if fact:
            f.put("kv.memory_gib", float(fact.values["gib"]), rule, f.log.evidence(fact))
            return
    f.put("kv.memory_gib", None, "no KV memory line")


def _capacity(f: Fields) -> Fact | None:
    """The `KV cache size` line the engine ran with. vLLM 0.10 prints one per worker, then
    sizes every worker's cache by the smallest (`num_gpu_blocks` is its block count);
    one process's lines are its workers', several processes' are separate engines."""
    lines = f.log.all(Kind.kv_capacity)
    if not lines:
        _v0_capacity(f)
        return None
    smallest: dict[object, Fact] = {}
    for fact in lines:
        key = fact.pid if fact.pid is not None else fact.proc
        if key not in smallest or _tokens(fact) < _tokens(smallest[key]):
            smallest[key] = fact
    if len({_tokens(fact) for fact in smallest.values()}) > 1:
        f.put("kv.capacity_tokens", None, "engine processes report different KV cache sizes",
              *(f.log.evidence(x) for x in smallest.values()))
        return None
    cap = next(iter(smallest.values()))
    blocks = f.log.first(Kind.num_gpu_blocks)
    if len({_tokens(fact) for fact in lines}) == 1:
        f.put("kv.capacity_tokens", _tokens(cap), "KV cache size line", f.log.evidence(cap))
    else:
        f.put("kv.capacity_tokens", _tokens(cap), f"the smallest of {len(lines)} per-worker KV "
              "cache size lines (the engine sizes every worker's cache by the smallest)",
              f.log.evidence(cap), f.log.evidence(blocks) if blocks else None)
    return cap


def _v0_capacity(f: Fields) -> None:
    """V0 engines report blocks, not tokens: tokens = blocks x block size, accepted only
    when the concurrency line printed with it agrees (it is tokens / max_model_len). The V0
    CPU backend prints `# cpu blocks: N` alone, with no concurrency line: its blocks x
    the block size the args state, checked against a concurrency line if one follows."""
    blocks = f.log.first(Kind.kv_blocks)
    conc = next((x for x in f.log.all(Kind.kv_concurrency) if blocks and x.line > blocks.line),
                None)
    size, size_ev = f.log.namespace_arg("block_size")
    cpu = blocks is not None and blocks.values.get("cpu_blocks") is not None
    count = blocks.values["cpu_blocks" if cpu else "blocks"] if blocks else None
    if blocks is None or count is None or (conc is None and not cpu) or size is None or \
            not size.isdigit():
        f.put("kv.capacity_tokens", None, "no KV cache size line")
        return
    tokens = int(count) * int(size)
    if conc is None:
        f.put("kv.capacity_tokens", tokens, f"V0 CPU backend: {count} cpu blocks x block size "
              f"{size}", f.log.evidence(blocks), size_ev)
        return
    length = int(conc.values["len"].replace(",", ""))
    if f"{tokens / length:.2f}" != conc.values["concurrency"]:
        f.put("kv.capacity_tokens", None, f"{count} blocks x block size {size} "
              "does not give the logged concurrency", f.log.evidence(blocks), size_ev,
              f.log.evidence(conc))
        return
    f.put("kv.capacity_tokens", tokens, f"V0 engine: {count} blocks x block "
          f"size {size}, agreeing with the concurrency line", f.log.evidence(blocks), size_ev,
          f.log.evidence(conc))


def _tokens(fact: Fact) -> int:
    return int(fact.values["tokens"].replace(",", ""))


def env_fields(f: Fields) -> None:
    facts = f.log.all(Kind.unknown_env)
    names = sorted({fact.values["name"] for fact in facts})
    if not facts and f.log.config_fact is None:
        f.put("env.unknown_vllm_vars", None, "no engine config line")
        return
    f.put("env.unknown_vllm_vars", names, "`Unknown vLLM environment variable detected` lines",
          *(f.log.evidence(fact) for fact in facts))


# quantization methods whose name alone fixes the weight format, with or without a
# quantized checkpoint (vLLM's fp8 method: fp8 weights; whether activations are fp8 too
# is precision.activations, decided by other evidence: activations.py)
METHOD_FORMATS = {"fp8": "fp8"}


def weight_fields(f: Fields, checkpoints: Checkpoints) -> None:
    dtype, dtype_ev = f.log.setting("dtype")
    dtype = convert_value(dtype, str)
    f.put("precision.dtype", dtype, "engine config line dtype", dtype_ev)
    method, ev = f.log.setting("quantization")
    ck = checkpoints.target
    if ck is not None and (method is None or method == ck.quantization.method):
        summary = ck.quantization.summary
        f.put("precision.weights", ck.quantization.weights,
              f"checkpoint quantization_config: {summary}", ev,
              Evidence(source=ck.path, text=summary))
    elif method is not None and ck is not None and ck.quantization.method is None:
        fixed = METHOD_FORMATS.get(method)
        f.put("precision.weights", fixed, f"--quantization {method}: the engine quantizes the "
              f"unquantized ({ck.quantization.weights}) checkpoint at load"
              + ("" if fixed else "; the method does not fix one weight format"), ev)
    elif method is not None:
        # a method name is not a weight precision: compressed-tensors may carry only a
        # kv_cache_scheme (bfloat16 weights); gptq's bits are in the checkpoint
        fixed = METHOD_FORMATS.get(method)
        f.put("precision.weights", fixed, f"engine config line quantization={method}"
              + (" (the method fixes the weight format)" if fixed else ""), ev,
              note=None if fixed else f"the log names the quantization method {method}; "
                   "which weights it quantizes, and how, needs the checkpoint (--checkpoint)")
    elif ev is not None:
        f.put("precision.weights", dtype, "no quantization: weights run in the model dtype", ev,
              dtype_ev)
    else:
        f.put("precision.weights", None, "no engine config line")
    _draft_weights(f, checkpoints)


def _draft_weights(f: Fields, checkpoints: Checkpoints) -> None:
    declared = f.declared.get("precision.draft_weights")
    draft = checkpoints.draft
    if draft is None:
        if declared is not None:
            f.put("precision.draft_weights", None, "draft checkpoint not inspected")
        return
    stored = draft.quantization.weights
    ev = Evidence(source=draft.path, text=draft.quantization.summary)
    if declared is None or declared == stored:
        f.put("precision.draft_weights", stored, "draft checkpoint quantization_config", ev)
    else:
        f.put("precision.draft_weights", None, "draft checkpoint quantization_config", ev,
              note=f"the draft checkpoint stores {stored}; a conversion at load is invisible to "
                   "the checkpoint: prove it with an [[expect]] marker")


def _from_args(f: Fields, name: str, key: str) -> None:
    value, ev = f.log.arg(key)
    f.put(name, value, "non-default args (requested; not echoed back by the engine)" if ev
          else "not among the non-default args, and the engine does not log it", ev)


def _from_metrics_or_args(f: Fields, name: str, label: str, convert: type,
                          after: Scrape | None) -> None:
    info = after.find(CACHE_INFO) if after else []
    if info and label in info[0].labels:
        raw = info[0].labels[label]
        f.put(name, convert_value(raw, convert), f"/metrics {CACHE_INFO} {label}",
              Evidence(source=after.source if after else "metrics", line=info[0].line,
                       text=f'{label}="{raw}"'))
        return
    _from_args(f, name, label)

