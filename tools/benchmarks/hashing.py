#!/usr/bin/env python3
"""Hashing: `sha256_file` against the tools a user would reach for, on the same bytes.

- one 1 GiB file: `sha256_file` vs `openssl dgst -sha256` (the one-core limit; target
  >= 0.9x its throughput) and vs coreutils `sha256sum`;
- a multi-file checkpoint (8 x 128 MiB): `sha256_files` on all cores vs one worker
  (target >= 1.7x on 2 cores);
- re-hashing an unchanged 1 GiB file through the hash cache vs hashing it (target
  >= 100x).
Every figure is a best-of-N wall time taken in this run; files live in a temp dir that
is deleted afterwards.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from registry.base.hashing import HashCache, cpu_count, sha256_file, sha256_files  # noqa: E402

MIB = 1024 * 1024
BIG = 1024 * MIB
SHARDS, SHARD = 8, 128 * MIB


def best(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time of `repeat` calls (the least disturbed by the shared machine)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def write_random(path: Path, size: int) -> Path:
    block = os.urandom(16 * MIB)
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
    hour_ago = time.time() - 3600  # a checkpoint at rest: old enough for the cache to trust
    os.utime(path, (hour_ago, hour_ago))
    return path


def tool(*argv: str) -> Callable[[], object]:
    return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def run() -> list[tuple[str, float, str]]:
    folder = Path(tempfile.mkdtemp(prefix="registry-bench-hashing-"))
    try:
        return _measure(folder)
    finally:
        shutil.rmtree(folder)


def _measure(folder: Path) -> list[tuple[str, float, str]]:
    big = write_random(folder / "big.bin", BIG)
    ours = best(lambda: sha256_file(big))
    openssl = best(tool("openssl", "dgst", "-sha256", str(big)))
    coreutils = best(tool("sha256sum", str(big)), repeat=1)

    shards = [write_random(folder / f"model-{i:05d}.safetensors", SHARD) for i in range(SHARDS)]
    one = best(lambda: sha256_files(shards, workers=1))
    cores = best(lambda: sha256_files(shards))

    cache = HashCache(folder / "hashes.sqlite")
    sha256_files([big], cache=cache)  # fills the cache
    hit = best(lambda: sha256_files([big], cache=cache), repeat=20)
    cache.close()

    gbps = BIG / ours / 1e9
    return [
        ("sha256_file vs openssl dgst -sha256", openssl / ours,
         f"throughput ratio on 1 GiB (ours {gbps:.2f} GB/s, openssl {BIG / openssl / 1e9:.2f}"
         " GB/s; target >= 0.9)"),
        ("sha256_file vs sha256sum", coreutils / ours,
         f"throughput ratio on 1 GiB (sha256sum {BIG / coreutils / 1e9:.2f} GB/s)"),
        (f"sha256_files {cpu_count()} cores vs 1", one / cores,
         f"speed-up on {SHARDS} x {SHARD // MIB} MiB files (target >= 1.7 on 2 cores)"),
        ("cache hit vs hashing", ours / hit,
         f"re-hash of an unchanged 1 GiB file ({hit * 1e3:.2f} ms; target >= 100)"),
    ]


if __name__ == "__main__":
    for name, value, explanation in run():
        print(f"{name:<44} {value:>12.3f}  {explanation}", flush=True)
