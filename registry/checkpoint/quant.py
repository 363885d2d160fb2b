"""`quantization_config`: the weight format token and the KV-cache scheme.

The weight format token is what a recipe's `precision.weights` is compared with:
the torch_dtype for unquantized weights, else `<type><bits>-w<bits>a<bits>` (e.g.
`int4-w4a16`: 4-bit integer weights, 16-bit activations; 8-bit float weights are `fp8`,
their activations a field of their own), else the method name.
See docs/checkpoints.md for the vocabulary.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from registry.checkpoint.models import KVCacheScheme, Quantization
from registry.errors import InvalidInput

ACTIVATION_BITS_UNQUANTIZED = 16


def quantization(config: dict[str, Any], torch_dtype: str | None, source: object
                 ) -> Quantization:
    q = config.get("quantization_config")
    if q is None:
        weights = torch_dtype or "unknown"
        return Quantization(weights=weights, summary=f"unquantized ({weights})",
                            activations=torch_dtype)
    if not isinstance(q, dict):
        raise InvalidInput(f"{source}: quantization_config is not a JSON object")
    method = str(q.get("quant_method", "unknown"))
    weights, summary = _weight_format(method, q, torch_dtype or "unknown")
    return Quantization(method=method, weights=weights, summary=summary,
                        activations=_activations(method, q, torch_dtype),
                        kv_cache_scheme=_kv_scheme(q, source), raw=q)


def _weight_format(method: str, q: dict[str, Any], dtype: str) -> tuple[str, str]:
    if method == "compressed-tensors":
        return _compressed_tensors(q, dtype)
    if method == "fp8":  # the weights only: the activations are `activations`' to say
        scheme = q.get("activation_scheme")
        block = q.get("weight_block_size")
        detail = f", blocks {block}" if block else ""
        acts = f", {scheme} fp8 activations" if scheme in FP8_ACTIVATION_SCHEMES else ""
        return "fp8", f"fp8 weights{acts}{detail}"
    if method in ("gptq", "awq", "gptq_marlin", "awq_marlin"):
        bits = q.get("bits", 4)
        return f"int{bits}-w{bits}a16", f"{method} int{bits} weights, group {q.get('group_size')}"
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            kind = q.get("bnb_4bit_quant_type", "fp4")
            return kind, f"bitsandbytes 4-bit {kind} weights"
        return "int8-w8a16", "bitsandbytes int8 weights"
    return method, f"{method} (weight scheme not interpreted)"


# vLLM's fp8 config quantizes activations per these schemes (fp8.py ACTIVATION_SCHEMES)
FP8_ACTIVATION_SCHEMES = ("dynamic", "static")
# methods that quantize weights only: the matmuls take activations in the model dtype
WEIGHT_ONLY = frozenset({"gptq", "awq", "gptq_marlin", "awq_marlin", "bitsandbytes"})


def _activations(method: str, q: dict[str, Any], dtype: str | None) -> str | None:
    """fp8 / int8 when the config quantizes activations, the model dtype when it
    says they are not, None when it does not say (an unknown method)."""
    if method == "fp8":  # an activation_scheme says activations are quantized too
        return "fp8" if q.get("activation_scheme") in FP8_ACTIVATION_SCHEMES else None
    if method in WEIGHT_ONLY:
        return dtype
    if method != "compressed-tensors":
        return None
    kinds = set()
    for group in (q.get("config_groups") or {}).values():
        if not isinstance(group, dict) or not group.get("weights"):
            continue
        a = group.get("input_activations")
        if not isinstance(a, dict):
            kinds.add(dtype or "unknown")
        else:
            kinds.add(f"{'fp' if a.get('type') == 'float' else 'int'}{a.get('num_bits')}")
    return "+".join(sorted(kinds)) if kinds else dtype


def _compressed_tensors(q: dict[str, Any], dtype: str) -> tuple[str, str]:
    groups = q.get("config_groups") or {}
    tokens, details = [], []
    for group in groups.values():
        w = (group or {}).get("weights")
        if not w:
            continue
        a = group.get("input_activations")
        token = _ct_token(w, a, group.get("format") or q.get("format") or "")
        tokens.append(token)
        details.append(f"{token} ({_describe(w)}; targets {', '.join(group.get('targets', []))})")
    if not tokens:  # e.g. a config that only carries a kv_cache_scheme
        return dtype, f"unquantized ({dtype}); compressed-tensors without weight groups"
    ignored = q.get("ignore") or []
    tail = f"; {len(ignored)} module(s) left unquantized" if ignored else ""
    return "+".join(sorted(set(tokens))), "; ".join(details) + tail


def _ct_token(w: dict[str, Any], a: dict[str, Any] | None, fmt: str) -> str:
    """`int4-w4a16`, `nvfp4-w4a4`; 8-bit float weights are `fp8` alone: their activations
    (`input_activations` present or null) are `precision.activations`' to say."""
    bits = w.get("num_bits")
    kind = "nvfp" if "nvfp4" in fmt else "fp" if w.get("type") == "float" else "int"
    if kind == "fp" and bits == 8:
        return "fp8"
    act_bits = a.get("num_bits") if a else ACTIVATION_BITS_UNQUANTIZED
    return f"{kind}{bits}-w{bits}a{act_bits}"


def _describe(args: dict[str, Any]) -> str:
    strategy = args.get("strategy")
    granularity = f"group {args.get('group_size')}" if strategy == "group" else strategy
    symmetry = "symmetric" if args.get("symmetric", True) else "asymmetric"
    return f"{args.get('type', 'int')}{args.get('num_bits')}, {granularity}, {symmetry}"


# modelopt's `kv_cache_quant_algo` names (vLLM's MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP)
MODELOPT_KV = {"fp8": KVCacheScheme(num_bits=8, type="float"),
               "nvfp4": KVCacheScheme(num_bits=4, type="float")}


def _kv_scheme(q: dict[str, Any], source: object) -> KVCacheScheme | None:
    """The KV scheme the config writes: `kv_cache_scheme` (compressed-tensors, modelopt), or
    modelopt's `kv_cache_quant_algo` (also under its `quantization` object). Whether an
    engine honours it is the engine's rule, not the checkpoint's."""
    scheme = q.get("kv_cache_scheme")
    if scheme is None:
        inner = q.get("quantization")
        nested = inner.get("kv_cache_quant_algo") if isinstance(inner, dict) else None
        algo = nested or q.get("kv_cache_quant_algo")
        return MODELOPT_KV.get(algo.lower()) if isinstance(algo, str) else None
    if not isinstance(scheme, dict):
        raise InvalidInput(f"{source}: quantization_config.kv_cache_scheme is not an object")
    known = {k: scheme[k] for k in KVCacheScheme.model_fields if k in scheme}
    try:
        return KVCacheScheme(**known)
    except ValidationError as e:
        problem = e.errors()[0]
        raise InvalidInput(f"{source}: quantization_config.kv_cache_scheme."
                           f"{problem['loc'][0]}: {problem['msg']}") from None
