"""Build the tiny random checkpoints the CPU engine tests serve.

    python tools/tiny_checkpoint.py --out DIR [tiny-llama tiny-llama-kv-fp8 ...]

Every model is deterministic (fixed seeds, a tokenizer trained on built-in text), so
two builds give byte-identical files. A model whose stamp names the current builder
version is skipped; a model is built in a temp folder and renamed into place, so a
crash never leaves a half-built checkpoint behind.

- `tiny-llama`: random Llama (hidden 256, 4 layers, 4 heads, 2 KV heads, head_dim 64,
  vocab 512), bf16 weights, byte-level BPE tokenizer, generation_config.
- `tiny-llama-kv-fp8`: the same weights plus a compressed-tensors `kv_cache_scheme`
  (FP8 e4m3, per-tensor) and per-layer `self_attn.k_scale` / `self_attn.v_scale`
  calibrated on the built-in text (amax / 448, post-RoPE keys, as llm-compressor does).
- `tiny-llama-kv-noscale`: the scheme without scale tensors (the engine uses 1.0).
- `tiny-hybrid`: Gemma-3 text model with sliding-window (128) and global layers
  interleaved.
- `tiny-llama-sharded`: `tiny-llama` split over two shards with an index.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

BUILDER_VERSION = 3
STAMP = ".tiny-checkpoint.json"
SEED = 0
VOCAB = 512
FP8_E4M3_MAX = 448.0
SLIDING_WINDOW = 128
# Wider than the usual 0.02: greedy decoding of a random model then varies with the
# prompt instead of repeating one token, so outputs are worth comparing.
INIT_STD = 0.1

SENTENCES = [
    "The quick brown fox jumps over the lazy dog while the cat sleeps in the sun.",
    "A least recently used cache evicts the entry that was read or written longest ago.",
    "Write a Python function that returns the sum of the squares of a list of numbers.",
    "SELECT user_id, count(*) FROM page_views GROUP BY user_id ORDER BY 2 DESC;",
    "The kv cache stores keys and values for every token so decoding does not recompute them.",
    "Once upon a time, a small robot learned to paint the stars above the quiet harbor.",
    '{"host": "127.0.0.1", "port": 8000, "workers": 4, "debug": false}',
    "Explain why the loop never ends: i = 0; while i < 10: print(i). Then fix it.",
    "Tensor parallelism splits each layer across devices; pipeline parallelism splits layers.",
    "Speculative decoding drafts several tokens and the target model verifies them at once.",
    "Calibrated scales map the largest observed value onto the largest representable number.",
    "Rain fell on the old stone bridge, and the river carried leaves toward the distant sea.",
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n"
    "        a, b = b, a + b\n    return a",
    "Benchmarks send each prompt once, with no warmup and no retries, and keep raw timestamps.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 100 1000 3.14159 2.71828",
]
SPECIAL_TOKENS = ["<s>", "</s>", "<pad>", "<unk>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)
KV_CACHE_SCHEME = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True,
                   "dynamic": False, "observer": "minmax", "group_size": None}


def write_tokenizer(dest: Path) -> None:
    """A byte-level BPE with exactly VOCAB entries, so every id the model emits decodes."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(SENTENCES, vocab_size=VOCAB, min_frequency=1,
                            special_tokens=SPECIAL_TOKENS, show_progress=False)
    if bpe.get_vocab_size() != VOCAB:
        raise SystemExit(f"tokenizer has {bpe.get_vocab_size()} entries, need {VOCAB}: "
                         "add built-in sentences")
    fast = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>",
                                   eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(dest)


def _generation_config():
    from transformers import GenerationConfig

    return GenerationConfig(bos_token_id=0, eos_token_id=1, pad_token_id=2)


def _seeded(factory: Callable[[], object]):
    import torch

    torch.manual_seed(SEED)
    model = factory()
    return model.to(torch.bfloat16).eval()


def llama_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=64, vocab_size=VOCAB, max_position_embeddings=2048,
        bos_token_id=0, eos_token_id=1, pad_token_id=2, tie_word_embeddings=False,
        initializer_range=INIT_STD,
    )
    return _seeded(lambda: LlamaForCausalLM(config))


def hybrid_model():
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(
        hidden_size=256, intermediate_size=512, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=64, vocab_size=VOCAB, max_position_embeddings=2048,
        sliding_window=SLIDING_WINDOW, query_pre_attn_scalar=64,
        layer_types=["sliding_attention", "full_attention"] * 2,
        bos_token_id=0, eos_token_id=1, pad_token_id=2, initializer_range=INIT_STD,
        tie_word_embeddings=False,  # tied (x sqrt(hidden)) a random model repeats its input
    )
    return _seeded(lambda: Gemma3ForCausalLM(config))


def save(model, dest: Path, **kwargs) -> None:
    model.save_pretrained(dest, **kwargs)
    # Most published checkpoints (and older readers) name the dtype `torch_dtype`.
    edit_config(dest, lambda c: c.setdefault("torch_dtype", c.get("dtype", "bfloat16")))
    _generation_config().save_pretrained(dest)
    write_tokenizer(dest)


def kv_scales(model) -> dict[str, object]:
    """Per-layer k/v scales from the cache of a forward pass over the built-in text."""
    import torch
    from transformers import PreTrainedTokenizerFast

    with tempfile.TemporaryDirectory() as tmp:
        write_tokenizer(Path(tmp))
        tokenizer = PreTrainedTokenizerFast.from_pretrained(tmp)
    device = next(model.parameters()).device  # the sized builder's models live on a GPU
    ids = torch.tensor([tokenizer("\n".join(SENTENCES))["input_ids"]], device=device)
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
    scales = {}
    for i, layer in enumerate(cache.layers):
        for kind, states in (("k", layer.keys), ("v", layer.values)):
            amax = states.float().abs().max()
            scales[f"model.layers.{i}.self_attn.{kind}_scale"] = (
                (amax / FP8_E4M3_MAX).reshape(1).to(torch.bfloat16))
    return scales


def edit_config(dest: Path, change: Callable[[dict[str, object]], object]) -> None:
    path = dest / "config.json"
    config = json.loads(path.read_text())
    change(config)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def add_kv_scheme(dest: Path) -> None:
    edit_config(dest, lambda c: c.update(quantization_config={
        "quant_method": "compressed-tensors", "format": "dense", "config_groups": {},
        "ignore": [], "kv_cache_scheme": KV_CACHE_SCHEME, "quantization_status": "compressed",
    }))


def add_tensors(dest: Path, tensors: dict[str, object]) -> None:
    from safetensors.torch import load_file, save_file

    file = dest / "model.safetensors"
    merged = {**load_file(file), **tensors}
    save_file(dict(sorted(merged.items())), file, metadata={"format": "pt"})


def build_llama(dest: Path) -> None:
    save(llama_model(), dest)


def build_kv_fp8(dest: Path) -> None:
    model = llama_model()
    save(model, dest)
    add_kv_scheme(dest)
    add_tensors(dest, kv_scales(model))


def build_kv_noscale(dest: Path) -> None:
    save(llama_model(), dest)
    add_kv_scheme(dest)


def build_hybrid(dest: Path) -> None:
    save(hybrid_model(), dest)


def build_sharded(dest: Path) -> None:
    model = llama_model()
    total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    save(model, dest, max_shard_size=total // 2 + total // 8)
    shards = sorted(dest.glob("model-*.safetensors"))
    if len(shards) != 2 or not (dest / "model.safetensors.index.json").is_file():
        raise SystemExit(f"expected 2 shards and an index, got {[s.name for s in shards]}")


BUILDERS: dict[str, Callable[[Path], None]] = {
    "tiny-llama": build_llama,
    "tiny-llama-kv-fp8": build_kv_fp8,
    "tiny-llama-kv-noscale": build_kv_noscale,
    "tiny-hybrid": build_hybrid,
    "tiny-llama-sharded": build_sharded,
}


def stamp(name: str) -> dict[str, object]:
    return {"builder": "tools/tiny_checkpoint.py", "version": BUILDER_VERSION, "model": name}


def is_complete(dest: Path, name: str) -> bool:
    try:
        return json.loads((dest / STAMP).read_text()) == stamp(name)
    except (OSError, ValueError):
        return False


def build(out: Path, name: str) -> bool:
    """Build one model into out/name unless already complete; True when it was built."""
    if is_complete(out / name, name):
        return False
    publish(out, name, BUILDERS[name], stamp(name))
    return True


def publish(out: Path, name: str, make: Callable[[Path], object],
            stamped: dict[str, object], stamp_file: str = STAMP) -> None:
    """`make` a model in a temp folder beside out/name, stamp it, then swap it in whole."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=out))
    try:
        make(tmp)
        (tmp / stamp_file).write_text(json.dumps(stamped, sort_keys=True) + "\n")
        tmp.chmod(0o755)
        shutil.rmtree(out / name, ignore_errors=True)
        tmp.rename(out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def build_all(out: Path, names: list[str] | None = None) -> list[Path]:
    """Build the named models (default: all) and return their folders."""
    for name in names or list(BUILDERS):
        build(out, name)
    return [out / name for name in names or BUILDERS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to build into")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"models to build (default: all): {', '.join(BUILDERS)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BUILDERS))
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; choose from {', '.join(BUILDERS)}")
    for name in args.names or BUILDERS:
        built = build(args.out, name)
        print(f"{'built' if built else 'ok   '}  {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
