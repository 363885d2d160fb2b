"""The release-file manifest: which files count, a digest stable across runs and
changed by any byte, agreement with `sha256sum`, and the real Laguna digests."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import tomllib
from pathlib import Path

import pytest

from registry.base.hashing import HashCache
from registry.checkpoint.manifest import (
    SCHEMA,
    build_manifest,
    is_release_file,
    manifest_from_sha256sum,
    release_files,
)
from registry.errors import InvalidInput
from tests.checkpoints import build, fp8_config, kv_scales, weights
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.usefixtures("hash_cache")

LAGUNA_SHA256SUM = FIXTURES / "laguna-b70-record" / "manifests" / "model-release-files.sha256"

HUB_METADATA = {
    ".cache/huggingface/download/model.safetensors.metadata": "etag",
    ".cache/huggingface/.gitignore": "*",
    ".huggingface/info": "x",
    ".git/HEAD": "ref: refs/heads/main",
    "model.safetensors.lock": "",
    "model-00001.safetensors.incomplete": "partial",
    "__pycache__/configuration.cpython-311.pyc": "bytecode",
    ".DS_Store": "finder",
}
RELEASE_EXTRAS = {".gitattributes": "*.safetensors filter=lfs", "original/params.json": "{}",
                  "configuration_tiny.py": "# remote code"}


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return build(tmp_path / "ckpt", fp8_config(), weights() | kv_scales([0, 1, 2, 3]),
                 extra=HUB_METADATA | RELEASE_EXTRAS)


def test_release_files_exclude_hub_metadata(checkpoint: Path) -> None:
    names = [p.relative_to(checkpoint).as_posix() for p in release_files(checkpoint)]
    assert names == sorted(["config.json", "generation_config.json", "tokenizer.json",
                            "tokenizer_config.json", "model.safetensors", *RELEASE_EXTRAS])


@pytest.mark.parametrize(("name", "kept"), [
    ("model-00001-of-00002.safetensors", True), (".gitattributes", True),
    ("sub/.gitattributes", True), (".env", False), ("sub/.hidden/x", False),
    ("a/__pycache__/b.pyc", False), ("x.lock", False), ("x.metadata", False),
])
def test_is_release_file(name: str, kept: bool) -> None:
    assert is_release_file(name) is kept


def test_manifest_lists_sha256_and_size(checkpoint: Path) -> None:
    manifest = build_manifest(checkpoint)
    entry = next(f for f in manifest.files if f.path == "config.json")
    data = (checkpoint / "config.json").read_bytes()
    assert entry.sha256 == hashlib.sha256(data).hexdigest() and entry.size == len(data)
    assert manifest.total_bytes == sum(p.stat().st_size for p in release_files(checkpoint))


def test_the_digest_scheme(checkpoint: Path) -> None:
    """Pinned independently of registry.base.canonical: sorted keys, no whitespace, UTF-8."""
    manifest = build_manifest(checkpoint)
    files = {f.path: f.sha256 for f in manifest.files}
    body = json.dumps({"files": files, "schema": SCHEMA}, sort_keys=True,
                      separators=(",", ":")).encode()
    assert manifest.digest == hashlib.sha256(body).hexdigest()


def test_the_digest_is_stable_across_runs_and_caches(checkpoint: Path, tmp_path: Path) -> None:
    first = build_manifest(checkpoint).digest
    assert build_manifest(checkpoint).digest == first
    assert build_manifest(checkpoint, cache=HashCache(tmp_path / "other.sqlite")).digest == first
    copy = build(tmp_path / "copy", fp8_config(), weights() | kv_scales([0, 1, 2, 3]),
                 extra=RELEASE_EXTRAS)  # same release files, no hub metadata, another path
    assert build_manifest(copy).digest == first


def test_any_single_byte_changes_the_digest(checkpoint: Path) -> None:
    before = build_manifest(checkpoint).digest
    rng = random.Random(0)
    for path in release_files(checkpoint):
        data = bytearray(path.read_bytes())
        if not data:
            continue
        i = rng.randrange(len(data))
        data[i] ^= 0x01
        path.write_bytes(data)
        changed = build_manifest(checkpoint).digest
        assert changed != before, f"flipping byte {i} of {path.name} kept the digest"
        data[i] ^= 0x01
        path.write_bytes(data)
        assert build_manifest(checkpoint).digest == before


def test_hub_metadata_does_not_change_the_digest(checkpoint: Path) -> None:
    before = build_manifest(checkpoint).digest
    (checkpoint / ".cache" / "huggingface" / "download" / "new.metadata").write_text("etag2")
    (checkpoint / "model.safetensors.lock").write_text("locked")
    assert build_manifest(checkpoint).digest == before


def test_a_renamed_file_changes_the_digest(checkpoint: Path) -> None:
    before = build_manifest(checkpoint).digest
    os.rename(checkpoint / "configuration_tiny.py", checkpoint / "configuration_other.py")
    assert build_manifest(checkpoint).digest != before


def test_sha256sum_lists_give_the_same_digest(checkpoint: Path) -> None:
    names = [p.relative_to(checkpoint).as_posix() for p in release_files(checkpoint)]
    listing = subprocess.run(["sha256sum", *(f"ckpt/{n}" for n in names)],
                             cwd=checkpoint.parent, capture_output=True, text=True,
                             check=True).stdout
    from_list = manifest_from_sha256sum(listing, "ckpt/")
    assert from_list.digest == build_manifest(checkpoint).digest
    assert all(f.size is None for f in from_list.files)


@pytest.mark.parametrize(("prefix", "identity", "count"), [
    ("int4/", "laguna-s-2.1-int4", 27),
    ("dflash-int4/", "laguna-s-2.1-dflash-int4", 5),
])
def test_the_laguna_identities_carry_the_real_manifest_digest(prefix: str, identity: str,
                                                               count: int) -> None:
    manifest = manifest_from_sha256sum(LAGUNA_SHA256SUM.read_text(), prefix)
    doc = tomllib.loads((ROOT / "identities" / "checkpoints" / f"{identity}.toml").read_text())
    assert len(manifest.files) == count == doc["facts"]["release_files"]
    assert doc["fields"]["manifest_sha256"] == manifest.digest
    assert "config.json" in {f.path for f in manifest.files}


def test_a_malformed_sha256sum_line_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match=r"list\.sha256: line 2: not '<sha256>  <path>'"):
        manifest_from_sha256sum(f"{'0' * 64}  a/x\nnot a line\n", "a/", "list.sha256")
    with pytest.raises(InvalidInput, match="no files under 'b/'"):
        manifest_from_sha256sum(f"{'0' * 64}  a/x\n", "b/")


def test_a_manifest_needs_a_directory(checkpoint: Path) -> None:
    with pytest.raises(InvalidInput, match="not a checkpoint directory"):
        build_manifest(checkpoint / "config.json")


def test_an_unreadable_release_file_is_a_clear_error(checkpoint: Path) -> None:
    (checkpoint / "dangling.json").symlink_to(checkpoint / "gone.json")
    with pytest.raises(InvalidInput, match=r"dangling\.json: cannot read: No such file"):
        build_manifest(checkpoint)
