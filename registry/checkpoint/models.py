"""What a checkpoint says about itself, read without torch and without loading weights.

These models are the contract between checkpoint inspection (which fills them) and
its readers: the KV arithmetic, the resolver, seal and `registry inspect`.
Fields may be added; none is renamed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from registry.base.model import Frozen


class AttentionLayer(Frozen):
    index: int
    kind: Literal["global", "sliding"]
    window: int | None = Field(None, description="sliding window in tokens")


class AttentionShape(Frozen):
    """The KV-relevant geometry of the attention layers."""

    num_layers: int
    num_attention_heads: int | None = None
    num_kv_heads: int
    head_dim: int
    layers: list[AttentionLayer] = Field(description="one entry per attention layer")

    @property
    def sliding_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.kind == "sliding")

    @property
    def global_layers(self) -> int:
        return len(self.layers) - self.sliding_layers


class MoEShape(Frozen):
    num_experts: int
    experts_per_token: int | None = None
    num_shared_experts: int | None = None
    intermediate_size: int | None = None


class KVCacheScheme(Frozen):
    """compressed-tensors `quantization_config.kv_cache_scheme`."""

    num_bits: int | None = None
    type: str | None = None  # "float" | "int"
    strategy: str | None = None  # "tensor" | "channel" | "head" ...
    symmetric: bool | None = None
    dynamic: bool | None = None
    observer: str | None = None


class ScaleTensor(Frozen):
    name: str
    layer: int | None
    kind: str = Field(description="k_scale, v_scale, ...")
    dtype: str
    shape: list[int]
    values: list[float] = Field(description="read from the tensor bytes")
    file: str


KVScaleVerdict = Literal["calibrated", "partial", "missing", "none", "unknown"]
"""Where the engine's KV scales come from. `unknown`: a scheme is declared but there
were no weight files to look in (a bare config.json, or no safetensors)."""


class KVScales(Frozen):
    verdict: KVScaleVerdict = Field(
        description="calibrated: every attention layer has k and v scales; partial: some; "
        "missing: a scheme but no scales (runs at 1.0); none: no scheme; "
        "unknown: a scheme, but no weight files to look in"
    )
    count: int = Field(description="KV scale tensors found")
    layers_with_k: list[int] = Field(default_factory=list)
    layers_with_v: list[int] = Field(default_factory=list)
    tensors: list[ScaleTensor] = Field(default_factory=list)


class Quantization(Frozen):
    method: str | None = Field(None, description="quant_method, e.g. compressed-tensors, fp8")
    weights: str = Field(description="weight format token: bfloat16, int4-w4a16, fp8 ...")
    summary: str = Field(description="one line on the weight scheme")
    activations: str | None = Field(
        None, description="what the quantized matmuls take as input: fp8 / int8 when the config "
        "quantizes activations, the model dtype when it does not; None: the config does not say")
    kv_cache_scheme: KVCacheScheme | None = None
    raw: dict[str, Any] = Field(default_factory=dict, description="quantization_config as found")


class TensorStats(Frozen):
    count: int
    bytes: int
    dtypes: dict[str, int] = Field(description="dtype -> tensor count")
    files: int


class CheckpointInfo(Frozen):
    path: str
    architecture: str | None
    model_type: str | None
    torch_dtype: str | None = Field(description="the dtype of unquantized tensors; not a KV dtype")
    attention: AttentionShape
    moe: MoEShape | None = None
    quantization: Quantization
    kv_scales: KVScales
    tensors: TensorStats | None = Field(None, description="None for a config-only input")
    generation_config: dict[str, Any] | None = None
    tokenizer: dict[str, Any] | None = None
