"""The capacity cross-check for llama.cpp: each cache's K and V MiB in the log against
the arithmetic from the GGUF's attention shape and the type the log names; when they
disagree, the types whose arithmetic does add up are named in the note."""

from __future__ import annotations

from registry.engines.llamacpp.ggml import KV_TYPES
from registry.engines.llamacpp.gguf import GGUFInfo
from registry.engines.llamacpp.kvgguf import predict
from registry.engines.llamacpp.logs import Cache, ServerStart
from registry.engines.llamacpp.resolve.out import Out
from registry.engines.llamacpp.resolve.weights import decide
from registry.formats.identity import Evidence


def _adds_up(predicted: float, logged: float) -> bool:
    return abs(predicted - logged) <= 0.01 + 1e-3 * logged  # the log prints 2 decimals


def capacity_check(out: Out, start: ServerStart, gguf: GGUFInfo) -> None:
    context = start.contexts[0] if start.contexts else None
    for cache in context.caches if context else []:
        prefix = "precision.swa_kv_cache" if cache.role == "swa" else "precision.kv_cache"
        for side in ("k", "v"):
            _check(out, f"{prefix}_{side}", cache, side, gguf)


def _check(out: Out, name: str, cache: Cache, side: str, gguf: GGUFInfo) -> None:
    field, values = out.fields.get(name), cache.size.values
    if field is None or "cells" not in values:
        return
    cells, logged, ggml_type = int(values["cells"]), float(values[f"{side}_mib"]), \
        values[f"{side}_type"]
    pad = cache.first("v_pad")
    swa = cache.role == "swa"
    pred = predict(gguf, side, ggml_type, cells, swa,
                   int(pad.values["values"]) if pad else None)
    if pred is None:
        return
    fits = _adds_up(pred.mib, logged)
    text = f"{pred.formula}; the log: {logged:.2f} MiB ({'adds up' if fits else 'differs'})"
    note = field.note
    if not fits:
        others = [t for t in KV_TYPES if (p := predict(gguf, side, t, cells, swa)) is not None
                  and _adds_up(p.mib, logged)]
        note = (f"capacity arithmetic for {ggml_type} gives {pred.mib:.2f} MiB, the log "
                f"{logged:.2f} MiB" + (f"; {', '.join(others)} would add up" if others else ""))
    out.fields[name] = field.model_copy(update={
        "evidence": [*field.evidence, Evidence(source=gguf.path, text=text)], "note": note})


def weights_check(out: Out, gguf: GGUFInfo, name: str = "precision.weights") -> None:
    """The GGUF's own file type and tensor counts beside what the log said (`name`: the
    target's or the draft's weights); they decide when the log printed no loader lines."""
    field = out.fields.get(name)
    if field is None:
        return
    counts = ", ".join(f"{t} {n}" for t, n in gguf.tensor_types.items())
    value, rule = decide(gguf.file_type, gguf.tensor_types, gguf.bits_per_weight)
    evidence = [*field.evidence, Evidence(
        source=gguf.path, text=f"general.file_type {gguf.file_type}; tensors: {counts}; "
                               f"{gguf.bits_per_weight:.2f} bits per weight: {value}")]
    if field.resolved is None and value is not None:
        out.put(name, value, "the GGUF: " + rule)
        out.fields[name] = out.fields[name].model_copy(update={"evidence": evidence})
        return
    note = field.note if value in (None, field.resolved) else \
        f"the GGUF's header says {value} ({rule}), the log {field.resolved}"
    out.fields[name] = field.model_copy(update={"evidence": evidence, "note": note})
