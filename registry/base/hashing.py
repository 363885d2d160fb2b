"""sha256 of files: fast on one core, parallel across files, and cached.

hashlib (OpenSSL) releases the GIL while it hashes, so threads use every core.
The cache maps (absolute path, size, mtime_ns, inode) to a digest in SQLite so an
unchanged 100 GB checkpoint is hashed once; any cache failure is a miss, never an
error, because the cache only saves time.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

CHUNK = 4 * 1024 * 1024
# A file modified this recently may change again within the same timestamp tick
# without its (size, mtime) changing ("racily clean" in git): never cache it.
RACY_NS = 2_000_000_000

Progress = Callable[[int], None]
"""Called with the number of bytes just hashed (from any thread)."""


def sha256_file(path: Path, progress: Progress | None = None) -> str:
    """Hex sha256 of the file's bytes, read in chunks of up to 4 MiB into one buffer
    (no bigger than the file: a 4 MiB buffer zeroed for each of 10,000 small objects
    was a quarter of `verify --all`)."""
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        buffer = bytearray(min(CHUNK, os.fstat(f.fileno()).st_size + 1))
        view = memoryview(buffer)
        while n := f.readinto(buffer):
            digest.update(view[:n])
            if progress:
                progress(n)
    return digest.hexdigest()


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def sha256_files(
    paths: Iterable[Path],
    progress: Progress | None = None,
    *,
    cache: HashCache | None = None,
    workers: int | None = None,
) -> dict[Path, str]:
    """sha256 of many files, on all cores; with `cache`, unchanged files are not read."""
    unique = list(dict.fromkeys(paths))
    found = cache.lookup_many(unique) if cache else {}
    missing = [p for p in unique if p not in found]
    if progress and found:
        progress(sum(p.stat().st_size for p in found))
    from concurrent.futures import ThreadPoolExecutor  # hashing many: `show` hashes none

    with ThreadPoolExecutor(max_workers=workers or cpu_count()) as pool:
        hashed = list(pool.map(lambda p: _hash_stable(p, progress), missing))
    if cache:
        cache.store_many(hashed)
    found |= {entry.path: entry.sha256 for entry in hashed}
    return {p: found[p] for p in unique}


class Hashed(NamedTuple):
    path: Path
    sha256: str
    stat: os.stat_result | None  # None: changed while read, or too recent to cache


def _hash_stable(path: Path, progress: Progress | None) -> Hashed:
    before = path.stat()
    started = time.time_ns()
    digest = sha256_file(path, progress)
    stable = _key(before) == _key(path.stat()) and before.st_mtime_ns < started - RACY_NS
    return Hashed(path, digest, before if stable else None)


def _key(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino


def default_cache_path() -> Path:
    """$REGISTRY_HASH_CACHE, else $XDG_CACHE_HOME/registry, else ~/.cache/registry."""
    if explicit := os.environ.get("REGISTRY_HASH_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "registry" / "hashes.sqlite"


class HashCache:
    """Digests keyed on (absolute path, size, mtime_ns, inode), in SQLite."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_path()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def lookup_many(self, paths: Iterable[Path]) -> dict[Path, str]:
        """Cached digests of the files whose stat still matches; the rest are misses."""
        db = self._connect()
        found: dict[Path, str] = {}
        if db is None:
            return found
        for path in paths:
            try:
                row = db.execute("SELECT size, mtime_ns, inode, sha256 FROM hashes "
                                 "WHERE path = ?", (str(path.resolve()),)).fetchone()
                if row and tuple(row[:3]) == _key(path.stat()):
                    found[path] = row[3]
            except (sqlite3.Error, OSError):
                continue
        return found

    def store_many(self, entries: Iterable[Hashed]) -> None:
        """Remember the digests of files that were stable while hashed."""
        rows = [(str(e.path.resolve()), *_key(e.stat), e.sha256) for e in entries if e.stat]
        db = self._connect()
        if not rows or db is None:
            return
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.Error:
            self._broken = True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=2, check_same_thread=False)
                db.execute("CREATE TABLE IF NOT EXISTS hashes (path TEXT PRIMARY KEY, "
                           "size INTEGER, mtime_ns INTEGER, inode INTEGER, sha256 TEXT)")
                self._db = db
            except (sqlite3.Error, OSError):
                self._broken = True
        return self._db
