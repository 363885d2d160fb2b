"""The checkpoints' content: the digest of each one's release-file manifest.

A path and a revision name a checkpoint; only the bytes prove which one ran. When the
checkpoint directory is on disk, every release file is hashed (through the hash
cache, so an unchanged checkpoint costs one stat per file after the first time) and
the manifest digest is the resolved value, compared with a declared
`manifest_sha256`.
"""

from __future__ import annotations

from pathlib import Path

from registry.checkpoint.manifest import Manifest, build_manifest
from registry.checkpoint.models import CheckpointInfo
from registry.engines.vllm.resolve.fields import Fields
from registry.errors import InvalidInput
from registry.formats.identity import Evidence
from registry.resolve.inputs import Checkpoints

RULE = "sha256 of the checkpoint's release-file manifest (registry.checkpoint.manifest)"


def content_fields(f: Fields, checkpoints: Checkpoints) -> None:
    _manifest_field(f, "model.manifest_sha256", checkpoints, checkpoints.target, "checkpoint")
    if checkpoints.draft is not None or f.declared.get("draft.manifest_sha256"):
        _manifest_field(f, "draft.manifest_sha256", checkpoints, checkpoints.draft,
                        "draft checkpoint")


def _manifest_field(f: Fields, name: str, checkpoints: Checkpoints, info: CheckpointInfo | None,
                    what: str) -> None:
    manifest = checkpoints.manifests.get(what)
    if info is None:
        f.put(name, None, f"{what} not on disk: its files were not hashed")
        return
    root = Path(info.path)
    if manifest is None and not root.is_dir():
        f.put(name, None, f"{what} is a bare config file: no release files to hash")
        return
    if manifest is None:
        try:
            manifest = checkpoints.manifests[what] = build_manifest(root)
        except InvalidInput as e:
            f.put(name, None, f"{what} not hashed", note=e.message)
            return
    f.put(name, manifest.digest, RULE, Evidence(source=str(root), text=describe(manifest)))


def describe(manifest: Manifest) -> str:
    return (f"{len(manifest.files)} release files, {manifest.total_bytes:,} bytes: "
            f"manifest sha256:{manifest.digest}")
