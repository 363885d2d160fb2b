"""The effective KV-cache storage format: rules, the engine-version rule table, and the
capacity cross-check as the stronger witness.

`kv_cache_dtype=auto` is not a dtype. Rules, each named in the result:
- explicit: a concrete `kv_cache_dtype` in the engine config line (`fp8` = e4m3);
- auto: the model dtype, unless the checkpoint has a compressed-tensors
  `kv_cache_scheme` (8-bit float), which makes every attention layer store FP8 e4m3.
  Without the checkpoint, the config line's `quantization=None` proves there is no
  `quantization_config`, so no scheme, and a method whose config vLLM never reads a
  scheme from (`NO_KV_SCHEME`: AWQ, GPTQ, bitsandbytes, MXFP4, GGUF, fp8, quark; each
  checked in vLLM's source below) stores the model dtype; compressed-tensors and
  modelopt may carry one: unresolved;
- the engine's `Using X data type to store kv cache` line stands for an explicit value
  when the config line is missing (bare `fp8`: older builds print it for e5m2 too);
- engine version: with such a scheme, vLLM <= 0.21 overrides an explicit value too,
  vLLM >= 0.22 (PR #42782) lets it win. Applied only from a release banner: a
  source build's banner (`0.1.dev1267+g6ae34833d`) is self-reported and may be stale;
- capacity: bytes per token from the checkpoint shape x reported tokens vs reported
  KV memory. When it disagrees with the rules, the field is a `mismatch` and the
  capacity decides the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from registry.checkpoint.kvmath import ELEMENT_BYTES
from registry.checkpoint.models import CheckpointInfo
from registry.engines.vllm.args import canonical_kv_dtype
from registry.engines.vllm.resolve.capacity import CapacityCheck
from registry.formats.identity import CHECK_FAILED, Evidence, ResolvedField, Status, status_for

RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:(?:rc|post)\d+)?(?:\+(?!g[0-9a-f]{6})[\w.]+)?$")
# (last release with the rule, rule): how an explicit value meets a checkpoint kv_cache_scheme
OVERRIDDEN = (0, 21)
VERSION_RULES = [
    (OVERRIDDEN, "vLLM <= 0.21: the checkpoint kv_cache_scheme silently overrides an "
                 "explicit value"),
    ((10**6, 0), "vLLM >= 0.22 (PR #42782): an explicit kv_cache_dtype wins over the "
                 "checkpoint kv_cache_scheme"),
]
UNQUANTIZED = {"float32", "bfloat16", "float16"}
# What `kv_cache_dtype=auto` stores, as vLLM's source decides it (vllm-project/vllm):
# - `Attention.__init__` (vllm/model_executor/layers/attention/attention.py, commit
#   0014ca6b9929614f1b72c4bb11e5238de49cba89) turns `auto` into `fp8` only when the
#   quantization config object carries a `kv_cache_scheme` attribute: compressed-tensors;
# - `resolve_kv_cache_dtype_string` (vllm/utils/torch_utils.py, commit
#   0024350b5da3ad174435e62a15273c0d3caba57b) maps `auto` to a cache dtype only for a
#   checkpoint whose quant_method starts with `modelopt` (`kv_cache_quant_algo` or
#   `kv_cache_scheme`);
# - every other method's KV method (`Fp8KVCacheMethod`, `QuarkKVCacheMethod`) only loads
#   k/v scales for an explicitly quantized cache ("kv cache dtype should be specified in
#   the FP8 checkpoint config and become the auto behavior" is still a TODO there).
# So under `auto` these methods store the model dtype, each checked in its source file:
# fp8 (fp8.py 0071b24b: Fp8Config holds activation_scheme, ignored_layers,
# weight_block_size, no kv_cache_scheme), quark (quark/quark.py 006bce4e: kv_cache_group
# and kv_cache_config, scales only), mxfp4 (mxfp4.py 007d5005: no attention method),
# bitsandbytes (bitsandbytes.py 01f5395f) and gguf (gguf.py 00620f91): linear/MoE only,
# gptq_marlin (gptq_marlin.py 00161ce0: linear/MoE only) and gptq (the same config
# family); awq and awq_marlin by the capacity of three real logs (wild corpus 10, 14, 15:
# 2-byte elements under `auto`). A method not listed stays unresolved without the
# checkpoint (compressed-tensors, modelopt*, and any method not checked here).
NO_KV_SCHEME = frozenset({"awq", "awq_marlin", "gptq", "gptq_marlin", "bitsandbytes", "gguf",
                          "mxfp4", "fp8", "quark"})
# quant_methods whose checkpoint KV scheme vLLM honours under `auto` (the two sources above)
HONOURS_SCHEME = ("compressed-tensors", "modelopt")


@dataclass(frozen=True)
class KVInputs:
    requested: str | None  # kv_cache_dtype as the engine config line says
    requested_evidence: Evidence | None
    unquantized: bool  # the config line says quantization=None: no quantization_config
    dynamic_scales: bool | None  # calculate_kv_scales as requested (None: no args line)
    model_dtype: str | None
    checkpoint: CheckpointInfo | None
    version: str | None
    dtype_line: Evidence | None  # "Using fp8 data type to store kv cache"
    capacity: CapacityCheck | None
    capacity_note: str | None  # why the capacity check did not run
    quantization: str | None = None  # the config line's quantization method
    quantization_evidence: Evidence | None = None


@dataclass(frozen=True)
class Decision:
    value: str | None
    rule: str
    evidence: list[Evidence]
    disagreement: bool = False
    note: str | None = None


def release(version: str | None) -> tuple[int, int] | None:
    """(major, minor) of a release banner; None for a source build's."""
    found = RELEASE.match(version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def has_scheme(checkpoint: CheckpointInfo | None) -> bool:
    """An 8-bit float KV scheme vLLM honours: compressed-tensors' `kv_cache_scheme`, or a
    modelopt checkpoint's (`kv_cache_quant_algo: FP8`); the same key in another method's
    config is not read by vLLM (see HONOURS_SCHEME)."""
    if checkpoint is None:
        return False
    q = checkpoint.quantization
    scheme = q.kv_cache_scheme
    return (scheme is not None and scheme.num_bits == 8 and scheme.type == "float"
            and (q.method or "").startswith(HONOURS_SCHEME))


def by_rules(kv: KVInputs) -> Decision:
    """The value the rules give, before the capacity is consulted."""
    ev = [e for e in (kv.requested_evidence, kv.dtype_line) if e]
    if kv.requested is None:
        return Decision(None, "no engine config line", ev)
    requested = canonical_kv_dtype(kv.requested)
    scheme = has_scheme(kv.checkpoint)
    if requested == "auto":
        if kv.checkpoint is None and kv.unquantized:
            return Decision(_dtype(kv.model_dtype), "auto = model dtype (quantization=None in "
                            "the engine config line: no quantization_config, so no KV cache "
                            "scheme)", ev)
        method = (kv.quantization or "").strip("'\"").lower()
        if kv.checkpoint is None and method in NO_KV_SCHEME:
            return Decision(_dtype(kv.model_dtype), f"auto = model dtype (quantization={method} "
                            "in the engine config line: vLLM reads no KV cache scheme from "
                            "that method's config)",
                            [*ev, *filter(None, [kv.quantization_evidence])])
        if kv.checkpoint is None:
            return Decision(None, "auto is not a dtype, and no checkpoint was inspected for a "
                                  "kv_cache_scheme", ev)
        if scheme:
            return Decision("fp8_e4m3", "auto + checkpoint kv_cache_scheme (8-bit float) -> "
                                        "fp8_e4m3", [*ev, _scheme_evidence(kv.checkpoint)])
        return Decision(_dtype(kv.model_dtype), "auto = model dtype (the checkpoint has no "
                                                "kv_cache_scheme)", ev)
    if not scheme:
        note = None if kv.checkpoint else "checkpoint not inspected"
        return Decision(requested, "explicit kv_cache_dtype in the engine config line", ev,
                        note=note)
    version = release(kv.version)
    ev.append(_scheme_evidence(kv.checkpoint))
    if version is None:
        return Decision(None, f"explicit {requested} vs the checkpoint kv_cache_scheme depends "
                              f"on the engine version, and {kv.version!r} is a self-reported "
                              "source-build banner: the rule table is not applied", ev)
    limit, rule = next((limit, rule) for limit, rule in VERSION_RULES if version <= limit)
    return Decision("fp8_e4m3" if limit == OVERRIDDEN else requested, rule, ev)


def decide(kv: KVInputs) -> Decision:
    rules = by_rules(kv)
    cap = kv.capacity
    if cap is None or cap.element_bytes is None:
        why = (kv.capacity_note and f"capacity cross-check: {kv.capacity_note}") if cap is None \
            else f"capacity {CHECK_FAILED}: the reported tokens fit no single element size"
        return Decision(rules.value, rules.rule, rules.evidence + (cap.evidence if cap else []),
                        note=_join(rules.note, why))
    size = cap.element_bytes
    evidence = rules.evidence + cap.evidence
    if rules.value is not None and ELEMENT_BYTES.get(rules.value) == size:
        return Decision(rules.value, f"{rules.rule}; capacity agrees ({size}-byte elements)",
                        evidence, note=rules.note)
    value = _format_for(size, rules.value, kv.model_dtype)
    if rules.value is None:
        return Decision(value, f"capacity cross-check: {size}-byte elements ({rules.rule})",
                        evidence)
    return Decision(value, f"capacity cross-check: {size}-byte elements, not {rules.value} as "
                           f"the rules say ({rules.rule})", evidence, disagreement=True)


def kv_cache_field(kv: KVInputs, declared: str | None) -> tuple[ResolvedField, Decision]:
    d = decide(kv)
    status = _status(declared, d.value, kv.requested)
    if d.disagreement:
        status = Status.mismatch
    return ResolvedField(declared=declared, resolved=d.value, status=status, rule=d.rule,
                         evidence=d.evidence, note=d.note), d


def kv_scales_field(kv: KVInputs, effective: str | None,
                    scale_line: Evidence | None) -> ResolvedField:
    ck = kv.checkpoint
    scales = ck.kv_scales if ck else None
    ev = [scale_line] if scale_line else []
    if effective is None:
        value, rule = None, "the cache format is unresolved"
    elif effective in UNQUANTIZED:
        value, rule = "n/a", f"an unquantized {effective} cache has no scales"
    elif scales is not None and has_scheme(ck) and scales.verdict == "calibrated":
        value, rule = (f"calibrated ({scales.count} scalars from checkpoint)",
                       "checkpoint k/v scale tensors, one k and one v per attention layer")
    elif scales is not None and scales.verdict == "partial":
        value, rule = (f"partial ({scales.count} scalars from checkpoint; other layers 1.0)",
                       "checkpoint has scales for some attention layers only")
    elif scales is not None and scales.verdict == "unknown":
        value, rule = None, "config-only checkpoint: no weight files to read scales from"
    elif ck is not None or scale_line is not None:
        value, rule = "uncalibrated (1.0)", "no checkpoint scales: the engine uses 1.0"
    elif kv.unquantized and kv.dynamic_scales is False:
        value, rule = "uncalibrated (1.0)", ("quantization=None: no quantization_config, so no "
                                             "checkpoint scales, and calculate_kv_scales is not "
                                             "requested: the engine uses 1.0")
    else:
        value, rule = None, "no checkpoint inspected and no scale warning in the log"
    return ResolvedField(resolved=value, status=status_for(None, value), rule=rule, evidence=ev)


def draft_kv_field(target: ResolvedField, own: str | None, own_evidence: Evidence | None,
                   declared: str | None) -> ResolvedField:
    if own == "auto":
        value, rule = None, "speculative_config.kv_cache_dtype=auto is not a storage format"
        ev = [own_evidence] if own_evidence else []
    elif own is not None:
        value = canonical_kv_dtype(own)
        rule, ev = "speculative_config.kv_cache_dtype", [own_evidence] if own_evidence else []
    else:
        value, rule, ev = target.resolved, "the draft shares the target's cache config", []
    expected = target.resolved if declared == "target" else declared
    status = status_for(expected, value)
    return ResolvedField(declared=declared, resolved=value, status=status, rule=rule, evidence=ev)


def _status(declared: str | None, value: str | None, requested: str | None) -> Status:
    if declared == "checkpoint":  # the recipe asks the engine to follow the checkpoint: auto
        if value is None:
            return Status.unresolved
        return Status.confirmed if requested == "auto" else Status.mismatch
    return status_for(declared, value)


def _format_for(size: int, rules_value: str | None, model_dtype: str | None) -> str:
    if size == 1:
        return rules_value if rules_value and ELEMENT_BYTES.get(rules_value) == 1 else "fp8_e4m3"
    if size == 2:
        dtype = _dtype(model_dtype)
        return dtype if dtype in ("bfloat16", "float16") else "bfloat16"
    return "float32"


def _dtype(model_dtype: str | None) -> str | None:
    return model_dtype.removeprefix("torch.") if model_dtype else None


def _scheme_evidence(checkpoint: CheckpointInfo | None) -> Evidence:
    assert checkpoint is not None
    scheme = checkpoint.quantization.kv_cache_scheme
    return Evidence(source=f"{checkpoint.path}", text=f"quantization_config.kv_cache_scheme = "
                    f"{scheme.model_dump(exclude_none=True) if scheme else None}")


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None
