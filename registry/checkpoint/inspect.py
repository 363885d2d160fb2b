"""What a checkpoint asks for, from its config and safetensors headers alone.

No torch, no weights loaded: `config.json` (and its nested `text_config`),
`generation_config.json`, the tokenizer files, every shard's header, and the bytes
of the KV scale tensors only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from registry.base.files import read_json
from registry.checkpoint.config import attention_shape, moe_shape, text_config
from registry.checkpoint.models import CheckpointInfo, ScaleTensor, TensorStats
from registry.checkpoint.quant import quantization
from registry.checkpoint.safetensors import Tensor, read_header
from registry.checkpoint.scales import kv_scales, scale_tensors
from registry.errors import InvalidInput

INDEX = "model.safetensors.index.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                   "special_tokens_map.json", "vocab.json", "merges.txt",
                   "chat_template.jinja", "chat_template.json")
HINT = "pass a Hugging Face checkpoint directory or its config.json"


def inspect_checkpoint(path: Path) -> CheckpointInfo:
    """Inspect a checkpoint directory, or a bare config.json (then `tensors` is None)."""
    config_path, root = _locate(Path(path))
    tensors = _all_tensors(root) if root else None
    return checkpoint_info(
        str(path), read_json(config_path), config_path,
        tensors=_stats(tensors) if tensors else None,
        scales=scale_tensors(tensors, root) if tensors and root else None,
        generation_config=_optional_json(root, "generation_config.json"),
        tokenizer=_tokenizer(root))


def checkpoint_info(path: str, config: dict[str, Any], config_path: Path, *,
                    tensors: TensorStats | None, scales: list[ScaleTensor] | None,
                    generation_config: dict[str, Any] | None,
                    tokenizer: dict[str, Any] | None) -> CheckpointInfo:
    """What a config and a header summary say: from a checkpoint on disk, or from the
    evidence a record sealed (registry/resolve/evidence.py)."""
    text = text_config(config)
    torch_dtype = first_str(config, "torch_dtype", "dtype") or first_str(text, "torch_dtype",
                                                                         "dtype")
    attention = attention_shape(config, config_path)
    quant = quantization(text, torch_dtype, config_path)
    architectures = config.get("architectures") or []
    return CheckpointInfo(
        path=path,
        architecture=architectures[0] if architectures else None,
        model_type=config.get("model_type"),
        torch_dtype=torch_dtype,
        attention=attention,
        moe=moe_shape(config),
        quantization=quant,
        kv_scales=kv_scales(quant.kv_cache_scheme, [layer.index for layer in attention.layers],
                            scales),
        tensors=tensors,
        generation_config=generation_config,
        tokenizer=tokenizer,
    )


def first_str(config: dict[str, Any], *keys: str) -> str | None:
    return next((config[k] for k in keys if isinstance(config.get(k), str)), None)


def _locate(path: Path) -> tuple[Path, Path | None]:
    """(config.json, checkpoint root or None for a config-only input)."""
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise InvalidInput(f"{path}: no config.json in this directory", hint=HINT)
        return config, path
    if path.is_file():
        return path, None
    raise InvalidInput(f"{path}: no such file or directory", hint=HINT)


def safetensors_files(root: Path) -> list[Path]:
    """The shards the engine loads: those the index lists, else every *.safetensors."""
    index = root / INDEX
    if not index.is_file():
        return sorted(root.glob("*.safetensors"))
    weight_map = read_json(index, "safetensors index").get("weight_map")
    if not isinstance(weight_map, dict):
        raise InvalidInput(f"{index}: weight_map is missing or not an object")
    shards = [root / name for name in sorted(set(weight_map.values()))]
    for shard in shards:
        if not shard.is_file():
            raise InvalidInput(f"{index}: lists {shard.name}, which is missing",
                               hint="the download is incomplete: fetch the missing shard")
    return shards


def _all_tensors(root: Path) -> dict[str, tuple[Path, Tensor]]:
    return {name: (shard, tensor) for shard in safetensors_files(root)
            for name, tensor in read_header(shard).items()}


def _stats(tensors: dict[str, tuple[Path, Tensor]]) -> TensorStats:
    dtypes: dict[str, int] = {}
    for _, tensor in tensors.values():
        dtypes[tensor.dtype] = dtypes.get(tensor.dtype, 0) + 1
    return TensorStats(count=len(tensors), bytes=sum(t.nbytes for _, t in tensors.values()),
                       dtypes=dict(sorted(dtypes.items())),
                       files=len({path for path, _ in tensors.values()}))


def _optional_json(root: Path | None, name: str) -> dict[str, Any] | None:
    return read_json(root / name, name) if root and (root / name).is_file() else None


def _tokenizer(root: Path | None) -> dict[str, Any] | None:
    if root is None:
        return None
    files = [name for name in TOKENIZER_FILES if (root / name).is_file()]
    if not files:
        return None
    config = _optional_json(root, "tokenizer_config.json") or {}
    length = config.get("model_max_length")
    if isinstance(length, int) and abs(length) >= 2**53:
        length = None  # Hugging Face's "no limit" sentinel, int(1e30): not a length
    summary = {"files": files, "class": config.get("tokenizer_class"),
               "model_max_length": length,
               "chat_template": "chat_template" in config or "chat_template.jinja" in files}
    for token in ("bos_token", "eos_token", "pad_token"):
        value = config.get(token)
        summary[token] = value.get("content") if isinstance(value, dict) else value
    return summary
