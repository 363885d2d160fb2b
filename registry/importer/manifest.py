"""The capsule's sha256 manifest, in whichever form the lab wrote it.

Two forms are read: `sha256sum` lines (`HEX  path`, `./path` or `*path`) in files such
as `SHA256SUMS` or `*.sha256`, and a JSON object `{"path": "hex"}` (`*sha256*.json`).
Paths are relative to the manifest's folder or one of its parents (the lab writes both);
the base under which most listed files exist is the one used. The manifest is the one
whose listed files the capsule holds most of: a checkpoint manifest that lists files
elsewhere is sealed as a file, not used.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from registry.base.model import Frozen
from registry.errors import InvalidInput, VerificationFailed

MAX_BYTES = 16 * 1024 * 1024


class Entry(Frozen):
    path: str  # capsule-relative POSIX path
    sha256: str
    line: int  # 1-based line (sha256sum) or entry number (JSON)


class Manifest(Frozen):
    path: str  # capsule-relative
    entries: list[Entry]


class Checked(Frozen):
    verified: list[str]
    missing: list[str]


def is_manifest_name(name: str) -> bool:
    lower = name.lower()
    return (lower.startswith("sha256sums") or lower.endswith(".sha256")
            or (lower.endswith(".json") and "sha256" in lower))


def find_manifest(capsule: Path, files: list[str], given: str | None = None) -> Manifest | None:
    """The given manifest, else the candidate that lists the most capsule files."""
    present = set(files)
    if given is not None:
        return read_manifest(capsule, given, present)
    best: tuple[int, int, Manifest] | None = None
    broken: InvalidInput | None = None
    for name in files:
        if not is_manifest_name(PurePosixPath(name).name):
            continue
        try:
            manifest = read_manifest(capsule, name, present)
        except InvalidInput as e:  # another file may be the manifest; if none is, say why
            broken = broken or (None if name.endswith(".json") else e)  # JSON: any data file
            continue
        hits = sum(e.path in present for e in manifest.entries)
        key = (hits, -name.count("/"))
        if hits and (best is None or key > best[:2]):
            best = (*key, manifest)
    if best is None and broken is not None:
        raise broken
    return best[2] if best else None


def read_manifest(capsule: Path, name: str, present: set[str]) -> Manifest:
    path = capsule / name
    if path.stat().st_size > MAX_BYTES:
        raise InvalidInput(f"{path}: larger than {MAX_BYTES >> 20} MiB: not a manifest")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text: not a manifest") from None
    listed = _json_entries(path, text) if name.endswith(".json") else _sum_lines(path, text)
    base = _base(PurePosixPath(name).parent, [p for _, _, p in listed], present)
    entries = [Entry(path=_join(base, p), sha256=h, line=n) for n, h, p in listed]
    return Manifest(path=name, entries=entries)


def check(capsule: Path, manifest: Manifest) -> Checked:
    """Every present listed file must match; absent ones are reported, never ignored."""
    from registry.base.hashing import sha256_file

    verified, missing = [], []
    for e in manifest.entries:
        path = capsule / e.path
        if not path.is_file():
            missing.append(e.path)
        elif sha256_file(path) != e.sha256:
            raise VerificationFailed(f"{path}: does not match {manifest.path} line {e.line}",
                                     hint="the capsule was changed after it was sealed")
        else:
            verified.append(e.path)
    return Checked(verified=verified, missing=missing)


def _sum_lines(path: Path, text: str) -> list[tuple[int, str, str]]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        digest, _, name = line.partition(" ")
        out.append((number, _hex(path, number, digest), _relative(path, number, name.lstrip(" *"))))
    return out


def _json_entries(path: Path, text: str) -> list[tuple[int, str, str]]:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise InvalidInput(f"{path}: not JSON: not a manifest") from None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidInput(f"{path}: not a {{path: sha256}} object: not a manifest")
    return [(n, _hex(path, n, h), _relative(path, n, p))
            for n, (p, h) in enumerate(value.items(), 1)]


def _hex(path: Path, number: int, digest: str) -> str:
    if len(digest) != 64 or any(c not in "0123456789abcdefABCDEF" for c in digest):
        raise InvalidInput(f"{path}: line {number}: not a `sha256  relative/path` line")
    return digest.lower()


def _relative(path: Path, number: int, name: str) -> str:
    pure = PurePosixPath(name)
    if not name or pure.is_absolute() or ".." in pure.parts or "\\" in name:
        raise InvalidInput(f"{path}: line {number}: not a `sha256  relative/path` line")
    return pure.as_posix()


def _base(folder: PurePosixPath, names: list[str], present: set[str]) -> PurePosixPath:
    """The manifest's folder or the parent under which most listed files exist."""
    bases = [folder, *folder.parents]
    return max(bases, key=lambda b: (sum(_join(b, n) in present for n in names), -bases.index(b)))


def _join(base: PurePosixPath, name: str) -> str:
    """`name` (normalised by `_relative`) under `base`, as a capsule path."""
    return name if str(base) == "." else f"{base.as_posix()}/{name}"
