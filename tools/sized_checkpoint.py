"""Build random-weight checkpoints large enough to measure on a GPU, on the GPU host.

    python tools/sized_checkpoint.py --out DIR [--device cuda] [llama-3b ...]

No model hub: the weights are drawn on the device (fixed seed), the tokenizer is the tiny
builder's (tools/tiny_checkpoint.py). Shapes are realistic where they set the cost of
decoding and the size of the KV cache: head_dim 128, grouped KV heads, 2-3 B parameters
in the layers, so one decode step reads gigabytes of weights and the GPU, not the host,
sets the pace. The vocabulary stays at the tokenizer's 512 entries (a real 128 k one
would add 0.4 B parameters to the head and nothing to the KV cache).

- `llama-3b`: Llama-3.2-3B layer shapes (hidden 3072, 28 layers, 24 heads, 8 KV heads,
  head_dim 128, MLP 8192): 2.82 B parameters, bf16, sharded with an index.
- `llama-3b-kv-fp8`: the same weights plus a compressed-tensors `kv_cache_scheme` (FP8
  e4m3, per tensor) and per-layer `k_scale` / `v_scale` calibrated on the built-in text.
- `hybrid-2b`: Gemma-3 text layers (hidden 2560, 24 layers, 16 heads, 4 KV heads,
  head_dim 128, MLP 10240), five sliding-window (512) layers to one global.

Same seed and device kind give the same bytes; a model whose stamp matches is skipped,
and a model is built in a temp folder and renamed into place.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_checkpoint as tiny

BUILDER_VERSION = 1
STAMP = ".sized-checkpoint.json"
# Checkpoints of this size are published in shards; the index is part of the layout.
SHARD = "2GB"


@dataclass(frozen=True)
class Shape:
    family: str  # "llama" | "gemma3"
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int = 128
    sliding_window: int | None = None
    global_every: int = 6  # gemma3: every 6th layer is global
    kv_fp8: bool = False
    positions: int = 8192  # max_position_embeddings: a recipe's max_model_len must fit
    # The tiny builder's spread: greedy decoding varies with the prompt; the residual
    # stream after 28 such layers (~1e3) stays far inside bf16's range.
    init_std: float = tiny.INIT_STD


LLAMA_3B = Shape("llama", hidden=3072, intermediate=8192, layers=28, heads=24, kv_heads=8)
MODELS: dict[str, Shape] = {
    "llama-3b": LLAMA_3B,
    "llama-3b-kv-fp8": replace(LLAMA_3B, kv_fp8=True),
    "hybrid-2b": Shape("gemma3", hidden=2560, intermediate=10240, layers=24, heads=16,
                       kv_heads=4, sliding_window=512, positions=32768),
}


def config(shape: Shape):
    common = dict(hidden_size=shape.hidden, intermediate_size=shape.intermediate,
                  num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
                  num_key_value_heads=shape.kv_heads, head_dim=shape.head_dim,
                  vocab_size=tiny.VOCAB, max_position_embeddings=shape.positions, bos_token_id=0,
                  eos_token_id=1, pad_token_id=2, tie_word_embeddings=False,
                  initializer_range=shape.init_std)
    if shape.family == "llama":
        from transformers import LlamaConfig

        return LlamaConfig(**common)
    from transformers import Gemma3TextConfig

    types = ["full_attention" if (i + 1) % shape.global_every == 0 else "sliding_attention"
             for i in range(shape.layers)]
    return Gemma3TextConfig(**common, sliding_window=shape.sliding_window,
                            query_pre_attn_scalar=shape.head_dim, layer_types=types)


def model(shape: Shape, device: str):
    """Random weights drawn on `device` (seeded), bf16, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(tiny.SEED)
    with torch.device(device):
        built = AutoModelForCausalLM.from_config(config(shape), dtype=torch.bfloat16)
    return built.eval()


def build_model(dest: Path, shape: Shape, device: str) -> None:
    built = model(shape, device)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in built.state_dict().items()}
    if shape.kv_fp8:
        tensors |= {k: v.to("cpu") for k, v in tiny.kv_scales(built).items()}
    del built
    save(dest, shape, tensors)


def save(dest: Path, shape: Shape, tensors: dict[str, object]) -> None:
    """Sharded safetensors with an index, config, generation config and tokenizer."""
    from safetensors.torch import save_file

    cfg = config(shape)
    cfg.architectures = ["LlamaForCausalLM" if shape.family == "llama" else "Gemma3ForCausalLM"]
    cfg.save_pretrained(dest)
    tiny.edit_config(dest, lambda c: c.update(torch_dtype="bfloat16", dtype="bfloat16"))
    if shape.kv_fp8:
        tiny.add_kv_scheme(dest)
    tiny._generation_config().save_pretrained(dest)
    tiny.write_tokenizer(dest)
    shards = _shards(tensors, _bytes(SHARD))
    names = [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    weight_map = {}
    for name, shard in zip(names, shards, strict=True):
        save_file(shard, dest / name, metadata={"format": "pt"})
        weight_map |= dict.fromkeys(shard, name)
    total = sum(t.numel() * t.element_size() for t in tensors.values())  # type: ignore[attr-defined]
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    (dest / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def _bytes(size: str) -> int:
    return int(size.removesuffix("GB")) * 10**9


def _shards(tensors: dict[str, object], limit: int) -> list[dict[str, object]]:
    """Tensors in name order, a new shard whenever the next would pass `limit` bytes."""
    shards: list[dict[str, object]] = [{}]
    size = 0
    for name in sorted(tensors):
        t = tensors[name]
        n = t.numel() * t.element_size()  # type: ignore[attr-defined]
        if shards[-1] and size + n > limit:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += n
    return shards


def parameters(shape: Shape) -> int:
    """Parameter count of the layers, embeddings and head (norms included)."""
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    attention = 2 * shape.hidden * q + 2 * shape.hidden * kv
    mlp = 3 * shape.hidden * shape.intermediate
    norms = (4 if shape.family == "gemma3" else 2) * shape.hidden
    qk_norms = 2 * shape.head_dim if shape.family == "gemma3" else 0
    return (shape.layers * (attention + mlp + norms + qk_norms)
            + 2 * tiny.VOCAB * shape.hidden + shape.hidden)


def stamp(name: str, shape: Shape, device: str) -> dict[str, object]:
    return {"builder": "tools/sized_checkpoint.py", "version": BUILDER_VERSION, "model": name,
            "shape": asdict(shape), "device": device.split(":")[0]}


def build(out: Path, name: str, shape: Shape, device: str) -> bool:
    """Build one model into out/name unless already complete; True when it was built."""
    dest = out / name
    try:
        if json.loads((dest / STAMP).read_text()) == stamp(name, shape, device):
            return False
    except (OSError, ValueError):
        pass
    tiny.publish(out, name, lambda tmp: build_model(tmp, shape, device),
                 stamp(name, shape, device), STAMP)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to build into")
    parser.add_argument("--device", default=None,
                        help="where the weights are drawn (default: cuda when present)")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"models to build (default: all): {', '.join(MODELS)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(MODELS))
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; choose from {', '.join(MODELS)}")
    device = args.device
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    for name in args.names or MODELS:
        shape = MODELS[name]
        built = build(args.out, name, shape, device)
        print(f"{'built' if built else 'ok   '}  {args.out / name}  "
              f"{parameters(shape) / 1e9:.2f} B parameters on {device}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
