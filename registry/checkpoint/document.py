"""A checkpoint identity document (`identities/checkpoints/NAME.toml`) from an inspection.

`[fields]` are merged into the `[model]` / `[draft]` table of a recipe that refers to
the document (so `manifest_sha256` becomes a declared identity); `[facts]` record
what the inspection showed. The checkpoint's config.json is copied beside it as
`NAME.config.json` so the KV arithmetic can be redone without the weights.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from registry.base.files import write_bytes
from registry.checkpoint.manifest import Manifest
from registry.checkpoint.models import CheckpointInfo
from registry.errors import InvalidInput, NotFound, Refused

SCHEMA = "registry.identity/v1"
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# A hub cache snapshot: .../models--ORG--NAME/snapshots/REVISION
HUB_SNAPSHOT = re.compile(r"models--([^/]+?)--([^/]+)/snapshots/([0-9a-f]{40})(?:/|$)")


def identity_document(name: str, info: CheckpointInfo, manifest: Manifest,
                      source: Path) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if hub := HUB_SNAPSHOT.search(source.resolve().as_posix()):
        fields |= {"hub_id": f"{hub[1]}/{hub[2]}", "revision": hub[3]}
    fields["manifest_sha256"] = manifest.digest
    a = info.attention
    windows = sorted({layer.window for layer in a.layers if layer.window})
    facts: dict[str, Any] = {
        "architecture": info.architecture, "torch_dtype": info.torch_dtype,
        "weights": info.quantization.weights, "release_files": len(manifest.files),
        "release_bytes": manifest.total_bytes, "config": f"{name}.config.json",
        "attention": {"layers": len(a.layers), "sliding_window_layers": a.sliding_layers,
                      "global_layers": a.global_layers,
                      "sliding_window": windows[0] if len(windows) == 1 else windows or None,
                      "num_key_value_heads": a.num_kv_heads, "head_dim": a.head_dim},
    }
    if scheme := info.quantization.kv_cache_scheme:
        facts["kv_cache_scheme"] = scheme.model_dump(exclude_none=True)
    facts["kv_scales"] = {"count": info.kv_scales.count, "source": info.kv_scales.verdict}
    return {"schema": SCHEMA, "kind": "checkpoint", "name": name,
            "description": f"{info.architecture or 'checkpoint'} inspected from {source.name}",
            "fields": fields, "facts": facts}


def find_identities_dir(start: Path) -> Path:
    """The nearest `identities/` folder walking up from `start`, as git finds `.git`."""
    for folder in [start.resolve(), *start.resolve().parents]:
        if (folder / "identities").is_dir():
            return folder / "identities"
    raise NotFound(f"no identities/ folder in {start.resolve()} or above",
                   hint="run from inside a recipe repository or pass --identities DIR")


def identity_paths(name: str, identities: Path, force: bool = False) -> tuple[Path, Path]:
    """(NAME.toml, NAME.config.json): checked before any hashing, so a bad name or an
    existing document fails fast."""
    if not NAME.match(name):
        raise InvalidInput(f"identity name {name!r}: use lowercase letters, digits, '.', '_', '-'")
    folder = identities / "checkpoints"
    paths = folder / f"{name}.toml", folder / f"{name}.config.json"
    if not force and (existing := [p for p in paths if p.exists()]):
        raise Refused(f"{existing[0]}: already exists", hint="pass --force to replace it")
    return paths


def write_identity(name: str, info: CheckpointInfo, manifest: Manifest, source: Path,
                   identities: Path, force: bool = False) -> Path:
    """Write NAME.toml and NAME.config.json under identities/checkpoints/."""
    toml_path, config_path = identity_paths(name, identities, force)
    config = source / "config.json" if source.is_dir() else source
    doc = to_toml(identity_document(name, info, manifest, source))
    toml_path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(config_path, config.read_bytes())
    write_bytes(toml_path, doc.encode())
    return toml_path


def to_toml(doc: dict[str, Any]) -> str:
    """TOML written by tomli-w (quoted keys where needed, proper escapes); TOML has no
    null, so a None value is left out."""
    import tomli_w

    return tomli_w.dumps(_without_none(doc))


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value if v is not None]
    return value
