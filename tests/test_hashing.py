"""sha256 of files: correctness against hashlib, parallel hashing, and the hash cache."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import pytest

from registry.base.hashing import CHUNK, HashCache, default_cache_path, sha256_file, sha256_files

HOUR_AGO = time.time() - 3600


def _write(path: Path, data: bytes, old: bool = True) -> Path:
    path.write_bytes(data)
    if old:  # a file at rest, as a downloaded checkpoint is: safe to cache
        os.utime(path, (HOUR_AGO, HOUR_AGO))
    return path


def _rewrite_keeping_stat(path: Path, data: bytes) -> None:
    """Change the bytes in place (same inode, same size) and put the mtime back."""
    st = path.stat()
    assert len(data) == st.st_size
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (st.st_ino, st.st_mtime_ns)


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, 2 * CHUNK + 17])
def test_sha256_file_matches_hashlib(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = _write(tmp_path / "f", data)
    seen: list[int] = []
    assert sha256_file(path, seen.append) == hashlib.sha256(data).hexdigest()
    assert sum(seen) == size


def test_sha256_files_hashes_every_file_in_parallel(tmp_path: Path) -> None:
    blobs = {tmp_path / f"f{i}": os.urandom(1000 * i + 1) for i in range(9)}
    for path, data in blobs.items():
        _write(path, data)
    seen: list[int] = []
    result = sha256_files([*blobs, tmp_path / "f0"], seen.append, workers=3)
    assert list(result) == list(blobs)  # input order, duplicates once
    assert result == {p: hashlib.sha256(d).hexdigest() for p, d in blobs.items()}
    assert sum(seen) == sum(len(d) for d in blobs.values())


def test_a_cache_hit_does_not_read_the_file(tmp_path: Path) -> None:
    cache = HashCache(tmp_path / "cache.sqlite")
    path = _write(tmp_path / "weights", b"a" * 4096)
    first = sha256_files([path], cache=cache)[path]
    # Same path, size, mtime and inode but other bytes: only a re-read would notice,
    # so getting the old digest back proves the file was not read.
    _rewrite_keeping_stat(path, b"b" * 4096)
    assert sha256_files([path], cache=cache)[path] == first
    os.utime(path, (HOUR_AGO - 60, HOUR_AGO - 60))  # now the key changes: a miss
    assert sha256_files([path], cache=cache)[path] == hashlib.sha256(b"b" * 4096).hexdigest()


def test_the_cache_survives_a_new_process(tmp_path: Path) -> None:
    path = _write(tmp_path / "weights", b"x" * 100)
    sha256_files([path], cache=HashCache(tmp_path / "cache.sqlite"))
    _rewrite_keeping_stat(path, b"y" * 100)
    again = HashCache(tmp_path / "cache.sqlite")
    assert again.lookup_many([path]) == {path: hashlib.sha256(b"x" * 100).hexdigest()}


def test_a_recently_modified_file_is_never_cached(tmp_path: Path) -> None:
    cache = HashCache(tmp_path / "cache.sqlite")
    path = _write(tmp_path / "fresh", b"a" * 64, old=False)
    sha256_files([path], cache=cache)
    _rewrite_keeping_stat(path, b"b" * 64)  # could happen within one timestamp tick
    assert sha256_files([path], cache=cache)[path] == hashlib.sha256(b"b" * 64).hexdigest()


def test_a_different_size_or_inode_is_a_miss(tmp_path: Path) -> None:
    cache = HashCache(tmp_path / "cache.sqlite")
    path = _write(tmp_path / "f", b"a" * 10)
    sha256_files([path], cache=cache)
    replacement = _write(tmp_path / "g", b"c" * 10)
    os.replace(replacement, path)  # same name, same mtime, another inode
    assert sha256_files([path], cache=cache)[path] == hashlib.sha256(b"c" * 10).hexdigest()
    _write(path, b"d" * 11)
    assert sha256_files([path], cache=cache)[path] == hashlib.sha256(b"d" * 11).hexdigest()


def test_a_corrupt_cache_is_a_miss_not_an_error(tmp_path: Path) -> None:
    store = tmp_path / "cache.sqlite"
    store.write_bytes(b"this is not a database" * 100)
    path = _write(tmp_path / "f", b"data")
    assert sha256_files([path], cache=HashCache(store))[path] == hashlib.sha256(b"data").hexdigest()


def test_an_unwritable_cache_is_a_miss_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the cache folder should be")
    cache = HashCache(tmp_path / "blocker" / "cache.sqlite")
    path = _write(tmp_path / "f", b"data")
    for _ in range(2):
        assert sha256_files([path], cache=cache)[path] == hashlib.sha256(b"data").hexdigest()


def test_the_cache_keeps_one_row_per_absolute_path(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "cache.sqlite"
    path = _write(tmp_path / "f", b"data")
    monkeypatch.chdir(tmp_path)
    sha256_files([Path("f")], cache=HashCache(store))
    sha256_files([path], cache=HashCache(store))
    rows = sqlite3.connect(store).execute("SELECT path FROM hashes").fetchall()
    assert rows == [(str(path.resolve()),)]


def test_default_cache_path(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REGISTRY_HASH_CACHE", str(tmp_path / "explicit.sqlite"))
    assert default_cache_path() == tmp_path / "explicit.sqlite"
    monkeypatch.delenv("REGISTRY_HASH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "registry" / "hashes.sqlite"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "registry" / "hashes.sqlite"
