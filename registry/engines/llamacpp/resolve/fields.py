"""Identity fields from a llama-server start: engine, weights, K and V types of each
cache, context and slots, offload and split, speculation, device. Each names the line
that decided it; what no line says stays unresolved."""

from __future__ import annotations

import re

from registry.engines.llamacpp.logs import Cache, Context, LlamaScan, ServerStart
from registry.engines.llamacpp.logs.shapes import FactGroup
from registry.engines.llamacpp.resolve.out import Out
from registry.engines.llamacpp.resolve.weights import decide_weights
from registry.logs.facts import Fact

FA_STATES = {"enabled": "on", "1": "on", "true": "on", "on": "on",
             "disabled": "off", "0": "off", "false": "off", "off": "off"}
HOST_BUFFER = re.compile(r"^(?:CPU|.*_Host|Host|CPU_\w+)$")


def engine_fields(out: Out, scan: LlamaScan, start: ServerStart | None) -> None:
    out.put("engine.name", "llama.cpp" if scan.recognised else None,
            "a line only llama.cpp prints", [scan.recognised])
    build = start.first("build") if start else None
    out.put("engine.version", build.values["number"] if build else None,
            "build line (self-reported)" if build else "no build line", [build],
            self_reported=True)
    out.put("engine.commit", build.values.get("commit") if build else None,
            "build line's commit (self-reported)" if build else "no build line", [build],
            self_reported=True)


def weight_fields(out: Out, start: ServerStart) -> None:
    target = next((m for m in start.models if m.role == "target"), None)
    draft = next((m for m in start.models if m.role == "draft"), None)
    if target is None:
        out.put("precision.weights", None, "no llama_model_loader block (not printed at this "
                "verbosity)")
    else:
        verdict = decide_weights(target)
        out.put("precision.weights", verdict.value, verdict.rule, list(verdict.evidence))
    if draft is None:
        out.put("precision.draft_weights", None, "no second model loaded (no draft)")
    else:
        verdict = decide_weights(draft)
        out.put("precision.draft_weights", verdict.value, "draft model: " + verdict.rule,
                list(verdict.evidence))


def cache_fields(out: Out, start: ServerStart) -> None:
    target = start.contexts[0] if start.contexts else None
    draft = start.contexts[1] if len(start.contexts) > 1 and _has_draft(start) else None
    why = "no context was created" if target is None else "no KV cache line in the context"
    main, swa = _cache(target, "main"), _cache(target, "swa")
    _types(out, "precision.kv_cache", target, main, why)
    _types(out, "precision.swa_kv_cache", target, swa,
           "no SWA cache" if target and target.caches else why)
    spec = start.first("spec_cache")
    if draft is not None:
        _types(out, "precision.draft_kv_cache", draft, _cache(draft, "main"),
               "no KV cache line in the draft's context")
    elif spec is not None and spec.values["dft"] == "yes":
        for side in ("k", "v"):  # -lv 3 prints the draft context's settings, not its cache
            out.put(f"precision.draft_kv_cache_{side}", spec.values[f"{side}_type"],
                    f"the speculative draft context's cache_{side}", [spec])
    else:
        for side in ("k", "v"):
            out.put(f"precision.draft_kv_cache_{side}", None, "no draft context")
    _label(out)
    _sizes(out, "kv", target, main, why)
    _sizes(out, "kv.swa", target, swa, "no SWA cache" if target and target.caches else why)


def _label(out: Out) -> None:
    """`precision.kv_cache`, the one KV axis the index, diff and teachers compare: the
    type when K and V agree, else `K/V`."""
    k, v = out.fields["precision.kv_cache_k"], out.fields["precision.kv_cache_v"]
    if k.resolved is None or v.resolved is None:
        out.put("precision.kv_cache", None, "K or V type unresolved")
        return
    label = k.resolved if k.resolved == v.resolved else f"{k.resolved}/{v.resolved}"
    out.put("precision.kv_cache", label, "K and V types of the target's cache (one label: "
            "K/V when they differ)", [])
    out.fields["precision.kv_cache"] = out.fields["precision.kv_cache"].model_copy(
        update={"evidence": k.evidence})


def _has_draft(start: ServerStart) -> bool:
    return any(m.role == "draft" for m in start.models) or start.first("draft_load") is not None


def _cache(context: Context | None, role: str) -> Cache | None:
    return next((c for c in context.caches if c.role == role), None) if context else None


def _types(out: Out, prefix: str, context: Context | None, cache: Cache | None,
           why: str) -> None:
    init = context.first("kv_init") if context and prefix == "precision.kv_cache" else None
    for side in ("k", "v"):
        if cache is not None:
            out.put(f"{prefix}_{side}", cache.size.values[f"{side}_type"],
                    f"KV cache size line {side.upper()} ({side}_type)", [cache.size])
        elif init is not None:
            out.put(f"{prefix}_{side}", init.values[f"{side}_type"],
                    f"llama_kv_cache_init type_{side}", [init])
        else:
            out.put(f"{prefix}_{side}", None, why)


def _sizes(out: Out, prefix: str, context: Context | None, cache: Cache | None,
           why: str) -> None:
    """`prefix` kv or kv.swa: cells and K/V MiB from the cache's size line (old builds:
    cells from `kv_size` in the init line, the MiB from `KV self size`)."""
    init = context.first("kv_init") if context and prefix == "kv" else None
    name = prefix + ("." if prefix == "kv" else "_")
    if cache is not None and "cells" in cache.size.values:
        out.put(name + "cells", int(cache.size.values["cells"]), "KV cache size line cells",
                [cache.size])
    elif init is not None:
        out.put(name + "cells", int(init.values["cells"]), "llama_kv_cache_init kv_size", [init])
    else:
        out.put(name + "cells", None, why)
    for side in ("k", "v"):
        out.put(f"{name}{side}_mib", float(cache.size.values[f"{side}_mib"]) if cache else None,
                f"KV cache size line {side.upper()} MiB" if cache else why,
                [cache.size] if cache else [])


def context_fields(out: Out, start: ServerStart) -> None:
    context = start.contexts[0] if start.contexts else None
    settings = _settings(context)
    slots, auto = start.first("n_slots"), start.first("parallel_auto")
    slot_ctx = start.first("slot_ctx")
    slot_value = (slot_ctx.values["ctx"] if slot_ctx else
                  slots.values.get("ctx") if slots else None)
    slot_fact = slot_ctx if slot_ctx else slots if slots and slots.values.get("ctx") else None
    n_ctx = settings.get("n_ctx")
    n_slots = slots.values["n"] if slots else None
    unified = _unified(settings, slots, auto)
    generate = start.first("generate")
    ctx_hint = generate or start.first("ctx_size_set")
    if n_ctx:
        out.put("runtime.ctx_size", int(n_ctx[0]), "llama_context n_ctx", [n_ctx[1]])
    elif slot_value and (n_slots == "1" or unified is True):
        out.put("runtime.ctx_size", int(slot_value), "the slot's n_ctx: one slot (or a unified "
                "cache) has the whole context", [slot_fact, slots])
    elif ctx_hint:
        # llama-cli prints the context it generates in; `... to ctx_size = N` is n_ctx too
        own = ctx_hint.kind == "generate"
        out.put("runtime.ctx_size", int(ctx_hint.values["n_ctx" if own else "n"]),
                "llama-cli's `generate: n_ctx`" if own else "`... to ctx_size = N`", [ctx_hint])
    else:
        out.put("runtime.ctx_size", None, "no llama_context n_ctx line")
    seq = settings.get("n_ctx_seq") or settings.get("n_ctx_per_seq")
    if seq:
        out.put("runtime.n_ctx_seq", int(seq[0]), "llama_context n_ctx_seq", [seq[1]])
    else:
        out.put("runtime.n_ctx_seq", int(slot_value) if slot_value else None,
                "the slot's n_ctx" if slot_value else "no n_ctx_seq line", [slot_fact])
    seqs = settings.get("n_seq_max")
    if slots:
        out.put("runtime.n_parallel", int(slots.values["n"]), "server's n_slots", [slots])
    elif seqs:
        out.put("runtime.n_parallel", int(seqs[0]), "llama_context n_seq_max", [seqs[1]])
    else:
        out.put("runtime.n_parallel", int(auto.values["n"]) if auto else None,
                "n_parallel auto, resolved" if auto else "no slot line", [auto])
    for key, name in (("n_batch", "runtime.batch_size"), ("n_ubatch", "runtime.ubatch_size")):
        got = settings.get(key)
        if got is None and key == "n_batch" and generate is not None:
            got = (generate.values["n_batch"], generate)
        out.put(name, int(got[0]) if got else None,
                (f"llama_context {key}" if got[1].kind == "context_setting"
                 else "llama-cli's `generate: n_batch`") if got else f"no {key} line",
                [got[1] if got else None])
    _flash_attn(out, context, settings)


def _settings(context: Context | None) -> dict[str, tuple[str, Fact]]:
    found: dict[str, tuple[str, Fact]] = {}
    for fact in context.all("context_setting") if context else []:
        found.setdefault(fact.values["key"], (fact.values["value"], fact))
    return found


def _unified(settings: dict[str, tuple[str, Fact]], slots: Fact | None,
             auto: Fact | None) -> bool | None:
    raw = (settings["kv_unified"][0] if "kv_unified" in settings
           else slots.values.get("unified") if slots else None) or \
        (auto.values["unified"] if auto else None)
    return None if raw is None else raw.lower() == "true"


def _flash_attn(out: Out, context: Context | None, settings: dict[str, tuple[str, Fact]]
                ) -> None:
    got = settings.get("flash_attn")
    resolved = context.first("fa_resolved") if context else None
    if resolved is not None and resolved.values["why"] == "not supported":
        # asked for and refused: the run had none, whatever the setting line says
        out.put("runtime.flash_attn", FA_STATES[resolved.values["state"]],
                "Flash Attention not supported, set to disabled", [resolved])
        return
    if got is None:
        out.put("runtime.flash_attn", None, "no flash_attn line")
    elif got[0] == "auto":
        state = FA_STATES[resolved.values["state"]] if resolved else None
        out.put("runtime.flash_attn", state,
                "flash_attn auto, resolved by the scheduler's line" if resolved
                else "flash_attn auto and no line resolving it", [got[1], resolved])
    else:
        out.put("runtime.flash_attn", FA_STATES.get(got[0].lower()),
                "llama_context flash_attn", [got[1]])


def offload_fields(out: Out, start: ServerStart) -> None:
    target = next((m for m in start.models if m.role == "target"), None)
    # a pasted excerpt may start after the loader block: its load lines are the start's own
    loaded: FactGroup = target if target is not None else start
    offloaded = loaded.first("offloaded")
    asked = start.first("gpu_layers_user")
    if offloaded:
        out.put("runtime.n_gpu_layers", int(offloaded.values["done"]),
                "load_tensors offloaded X/Y layers", [offloaded])
    else:
        out.put("runtime.n_gpu_layers", int(asked.values["n"]) if asked else None,
                "n_gpu_layers set by the user" if asked else "no offload line", [asked])
    meta = loaded.first("meta_device") or start.first("meta_device")
    buffers = loaded.all("model_buffer")
    # `CUDA_Split` is a row-split buffer spread over the devices, not a device
    devices = sorted({_device(b.values["device"]) for b in buffers
                      if not HOST_BUFFER.match(b.values["device"])
                      and not b.values["device"].endswith("_Split")})
    if meta:
        out.put("parallel.devices", int(meta.values["count"]), "Meta device line", [meta])
        out.put("parallel.split_mode", "tensor", "Meta device for tensor parallelism", [meta])
    elif buffers:
        out.put("parallel.devices", len(devices), "devices holding model buffers "
                f"({', '.join(devices) or 'none: CPU only'})", list(buffers))
        split = "row" if any("_Split" in b.values["device"] for b in buffers) else \
            "layer" if len(devices) > 1 else None
        pipeline = start.first("pipeline") if split == "layer" else None
        out.put("parallel.split_mode", split,
                "row-split buffers" if split == "row" else "model buffers on several devices, "
                "none split by rows" + (" (pipeline parallelism enabled)" if pipeline else "")
                if split else "one device or none: no split", [*buffers, pipeline])
    else:
        out.put("parallel.devices", None, "no model buffer lines")
        out.put("parallel.split_mode", None, "no model buffer lines")
    _device_name(out, start, devices)


def _device(buffer: str) -> str:
    """`MTL0_Mapped` -> MTL0 (several mapped chunks on one device are one device)."""
    return re.sub(r"_(?:Mapped|REPACK)$", "", buffer)


def _device_name(out: Out, start: ServerStart, used: list[str]) -> None:
    named = [f for m in start.models if m.role == "target" for f in m.all("using_device")]
    by_device = {f.values["device"]: f for f in named}
    chosen = [by_device[d] for d in used if d in by_device] or \
        (named if not used and len({f.values["name"] for f in named}) == 1 else [])
    if not chosen:
        chosen = _one_name(start)
    names = sorted({f.values["name"] if "name" in f.values else _listed_name(f) for f in chosen})
    out.put("platform.device", names[0] if len(names) == 1 else None,
            "the device holding the model" if len(names) == 1 else
            "devices of different names" if names else "no device named", list(chosen[:4]))


def _one_name(start: ServerStart) -> list[Fact]:
    """The devices listed, when they bear one name: the device lists first, then Metal's
    `GPU name`, then the SYCL table (which spells the same card without `(R)`/`(TM)`)."""
    listed = [f for f in start.all("listed_device") + start.all("metal_gpu") if not _is_cpu(f)]
    for group in ([f for f in listed if "device4" not in f.values],
                  [f for f in listed if "device4" in f.values]):
        if group:
            return group if len({_listed_name(f) for f in group}) == 1 else []
    return []


def _listed_name(fact: Fact) -> str:
    v = fact.values
    return (v.get("name") or v.get("name2") or v.get("name3") or v.get("name4") or "").strip()


def _is_cpu(fact: Fact) -> bool:
    """A listed CPU: `- CPU : ...`, or a SYCL table's `[opencl:cpu:0]` / `[opencl:acc:0]`."""
    v = fact.values
    return (v.get("device") or v.get("device3") or "").startswith("CPU") or \
        any(part in v.get("device4", "") for part in (":cpu:", ":acc:"))


def spec_fields(out: Out, start: ServerStart) -> None:
    impl, mtp = start.first("spec_impl"), start.first("mtp_path")
    draft, none = start.first("draft_load"), start.first("spec_none")
    if impl:
        out.put("spec.method", impl.values["method"], "speculative implementation added", [impl])
    elif mtp:
        out.put("spec.method", "draft-mtp", "MTP assistant loaded into the target model", [mtp])
    elif draft:
        out.put("spec.method", "draft", "draft model loaded", [draft])
    elif none:
        out.put("spec.method", "none", "the server says no speculative decoding", [none])
    else:
        out.put("spec.method", None, "no speculative decoding line")
    limits = start.first("spec_limits")
    for key in ("n_max", "n_min"):
        out.put(f"spec.{key}", int(limits.values[key]) if limits else None,
                f"speculative {key} line" if limits else f"no {key} printed", [limits])


def timing_fields(out: Out, scan: LlamaScan) -> None:
    t = scan.timings
    cli = f" ({t.generations} of them llama-cli timing blocks: one generation each, its " \
        "`eval time` counted in `runs`)" if t.generations else ""
    out.put("timing.requests", t.requests, "completed requests: final `eval time` lines, one "
            "per server start and task" + cli, [t.first_eval])
    rates = [float(f.values["tps"]) for f in t.evals]
    out.put("timing.mean_eval_tps", round(sum(rates) / len(rates), 4) if rates else None,
            f"mean of {len(rates)} print_timing `eval time` tokens per second (one per "
            "completed request): sum / count" if rates else "no completed request",
            list(t.evals))
    for name, fact, key in (("timing.first_prompt_tps", t.first_prompt, "tps"),
                            ("timing.first_eval_tps", t.first_eval, "tps"),
                            ("timing.first_draft_acceptance", t.first_acceptance, "rate")):
        out.put(name, float(fact.values[key]) if fact else None,
                ("first such timing line" + (" (the first completed generation's block)"
                                             if t.generations else "")) if fact
                else "no such timing line (a prompt figure counts only with a completed "
                     "generation)", [fact])


def quality_fields(out: Out, start: ServerStart) -> None:
    """llama-perplexity's final estimate, with its error: a quality figure of the run's
    model and context, never a speed."""
    final, chunks = start.first("ppl_final"), start.first("ppl_chunks")
    out.put("quality.perplexity", float(final.values["ppl"]) if final else None,
            "`Final estimate: PPL = X +/- E`" if final else "no final perplexity estimate",
            [final])
    out.put("quality.perplexity_error", float(final.values["err"]) if final else None,
            "the estimate's `+/-`" if final else "no final perplexity estimate", [final])
    out.put("quality.perplexity_chunks", int(chunks.values["chunks"]) if chunks else None,
            "`calculating perplexity over N chunks`" if chunks else "no chunk count", [chunks])
