"""A record's checkpoint evidence: what the resolver read from each checkpoint, sealed
as small hashed artifacts, so anyone can re-resolve the record without the checkpoint.

Per checkpoint (`evidence/checkpoint/`, `evidence/draft/`):

- `config.json` and `generation_config.json`: the files' exact bytes (the
  quantization config and its `kv_cache_scheme` are in config.json);
- `safetensors.json`: the header summary (tensor count, bytes, dtypes, files) and
  every KV scale tensor with its values, as read from the tensor bytes; the tokenizer
  summary;
- `manifest.json`: the release-file manifest whose digest is `model.manifest_sha256`.

Reading them back goes through the same code as inspecting a checkpoint on disk
(`registry.checkpoint.inspect.checkpoint_info`), so the resolver's rules see the same
facts either way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from registry.base.canonical import canonical_bytes, to_jsonable
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.checkpoint.manifest import Manifest
from registry.checkpoint.models import CheckpointInfo, ScaleTensor, TensorStats
from registry.errors import InvalidInput, RegistryError
from registry.resolve.inputs import Checkpoints

M = TypeVar("M", bound=BaseModel)
FOLDER = "evidence"
ROLES = {"checkpoint": "checkpoint", "draft": "draft checkpoint"}  # folder -> Checkpoints role
CONFIG, GENERATION, SUMMARY, MANIFEST = ("config.json", "generation_config.json",
                                         "safetensors.json", "manifest.json")


class HeaderSummary(Frozen):
    tensors: TensorStats | None
    kv_scales: list[ScaleTensor] | None  # None: there were no tensors to look in
    tokenizer: dict[str, Any] | None = None


def evidence_files(checkpoints: Checkpoints) -> dict[str, bytes]:
    """Artifact name -> bytes for every checkpoint the resolver inspected."""
    files: dict[str, bytes] = {}
    for folder, role in ROLES.items():
        info = checkpoints.target if folder == "checkpoint" else checkpoints.draft
        if info is None:
            continue
        root = Path(info.path)
        config = root / CONFIG if root.is_dir() else root
        prefix = f"{FOLDER}/{folder}"
        files[f"{prefix}/{CONFIG}"] = config.read_bytes()
        if root.is_dir() and (root / GENERATION).is_file():
            files[f"{prefix}/{GENERATION}"] = (root / GENERATION).read_bytes()
        summary = HeaderSummary(tensors=info.tensors,
                                kv_scales=info.kv_scales.tensors if info.tensors else None,
                                tokenizer=info.tokenizer)
        files[f"{prefix}/{SUMMARY}"] = canonical_bytes(to_jsonable(summary))
        if (manifest := checkpoints.manifests.get(role)) is not None:
            files[f"{prefix}/{MANIFEST}"] = canonical_bytes({"files": to_jsonable(manifest.files)})
    return files


def has_evidence(names: list[str]) -> bool:
    return any(n.startswith(f"{FOLDER}/") for n in names)


def evidence_checkpoints(read: Callable[[str], bytes | None]) -> Checkpoints:
    """The checkpoints as the sealed evidence describes them (`read(name)` gives an
    artifact's bytes, None when the record lacks it); nothing is looked for on disk."""
    found = Checkpoints(given=True)
    for folder, role in ROLES.items():
        prefix = f"{FOLDER}/{folder}"
        config = read(f"{prefix}/{CONFIG}")
        if config is None:
            continue
        info = _info(prefix, config, read(f"{prefix}/{GENERATION}"), read(f"{prefix}/{SUMMARY}"))
        if folder == "checkpoint":
            found.target = info
        else:
            found.draft = info
        manifest = read(f"{prefix}/{MANIFEST}")
        if manifest is not None:
            found.manifests[role] = _model(Manifest, manifest, f"{prefix}/{MANIFEST}")
        found.notes.append(f"{role} from the record's sealed evidence ({prefix}/)")
    return found


def _info(prefix: str, config: bytes, generation: bytes | None,
          summary: bytes | None) -> CheckpointInfo:
    from registry.checkpoint.inspect import checkpoint_info

    header = _model(HeaderSummary, summary, f"{prefix}/{SUMMARY}") if summary else \
        HeaderSummary(tensors=None, kv_scales=None)
    return checkpoint_info(prefix, _object(config, f"{prefix}/{CONFIG}"), Path(prefix, CONFIG),
                           tensors=header.tensors, scales=header.kv_scales,
                           generation_config=_object(generation, f"{prefix}/{GENERATION}")
                           if generation else None, tokenizer=header.tokenizer)


def _object(data: bytes, name: str) -> dict[str, Any]:
    try:
        value = loads_json(data)
    except (ValueError, RegistryError) as e:
        raise InvalidInput(f"{name}: not JSON ({e})") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{name}: not a JSON object")
    return value


def _model(model: type[M], data: bytes, name: str) -> M:
    try:
        return model.model_validate(_object(data, name))
    except ValidationError as e:
        raise InvalidInput(f"{name}: not sealed evidence ({e.errors()[0]['msg']})") from None
