"""The release-file manifest: sha256 of every real release file of a checkpoint.

Its digest is the checkpoint's content identity: the sha256 of the canonical JSON of
`{"schema": "registry.manifest/v1", "files": {relpath: sha256}}`. Sizes are listed
but left out of the digest, so the same digest comes from a `sha256sum` list.
Hub cache metadata (`.cache/`, `.huggingface/`, locks, ...) is not a release file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from pydantic import Field, computed_field

from registry.base.canonical import digest
from registry.base.hashing import HashCache, Progress, sha256_files
from registry.base.model import Frozen
from registry.errors import InvalidInput

SCHEMA = "registry.manifest/v1"
EXCLUDED_DIRS = {".cache", ".huggingface", ".git", "__pycache__"}
EXCLUDED_SUFFIXES = (".lock", ".incomplete", ".metadata")
KEPT_DOTFILES = {".gitattributes"}
SHA256SUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


class ManifestFile(Frozen):
    path: str = Field(description="relative to the checkpoint root, '/'-separated")
    sha256: str
    size: int | None = Field(None, description="bytes; None when read from a sha256sum list")


class Manifest(Frozen):
    files: list[ManifestFile] = Field(description="sorted by path")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def digest(self) -> str:
        """sha256 of the canonical {schema, files: {path: sha256}}: the content identity."""
        return digest({"schema": SCHEMA, "files": {f.path: f.sha256 for f in self.files}})

    @property
    def total_bytes(self) -> int:
        return sum(f.size or 0 for f in self.files)


def is_release_file(relpath: str) -> bool:
    """False for hub cache metadata, locks, partial downloads and dotfiles."""
    parts = PurePosixPath(relpath).parts
    if any(part in EXCLUDED_DIRS for part in parts) or relpath.endswith(EXCLUDED_SUFFIXES):
        return False
    return not any(part.startswith(".") and part not in KEPT_DOTFILES for part in parts)


def release_files(root: Path) -> list[Path]:
    """Every release file under `root` (symlinks followed, as in a hub snapshot)."""
    if not root.is_dir():
        raise InvalidInput(f"{root}: not a checkpoint directory",
                           hint="a manifest covers a whole checkpoint directory")
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS)
        for name in files:
            path = Path(folder, name)
            if is_release_file(path.relative_to(root).as_posix()):
                found.append(path)
    return sorted(found)


def build_manifest(path: Path, progress: Progress | None = None,
                   cache: HashCache | None = None) -> Manifest:
    """Hash every release file on all cores; unchanged files come from the hash cache."""
    root = Path(path)
    files = release_files(root)
    if not files:
        raise InvalidInput(f"{root}: no release files to hash")
    try:
        digests = sha256_files(files, progress, cache=cache or HashCache())
    except OSError as e:
        raise InvalidInput(f"{e.filename}: cannot read: {e.strerror}") from None
    return Manifest(files=[ManifestFile(path=p.relative_to(root).as_posix(), sha256=digests[p],
                                        size=p.stat().st_size) for p in files])


def manifest_from_sha256sum(text: str, prefix: str = "", source: str = "sha256sum list"
                            ) -> Manifest:
    """The manifest of the files under `prefix` in a `sha256sum`-format list."""
    files = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = SHA256SUM_LINE.match(line)
        if m is None:
            raise InvalidInput(f"{source}: line {number}: not '<sha256>  <path>': {line[:80]!r}")
        name = m[2].removeprefix("./")
        if name.startswith(prefix) and is_release_file(name[len(prefix):]):
            files.append(ManifestFile(path=name[len(prefix):], sha256=m[1].lower()))
    if not files:
        raise InvalidInput(f"{source}: no files under {prefix!r}")
    return Manifest(files=sorted(files, key=lambda f: f.path))
