#!/usr/bin/env python3
"""Import: a folder of 10 lab capsules in one call, per capsule and per MB.

Ten copies of the real Laguna B70 capsule (tests/data/lab/laguna-b70-record: engine
log, 13 rows of token timestamps, manifest, oracles; ~0.58 MB), each with one distinct
extra file so that each is new evidence, imported with `registry import DIR --each` as
one fresh process into an empty home (manifest check, layout, resolver pass over the
log, rows converted and re-derived, published figures re-derived, hashing, signing,
ledger commit, index). Then the same command again: every capsule is found already
imported. A second folder makes each capsule ~1.1 MB: the same plus byte copies of
its log and rows under `extra/` (sealed as unlisted files). Baselines in the same run:
a bare `python -c pass` start-up and `sha256sum` over the same bytes. Target: <= 1 s
per ~1 MB capsule.

    .venv/bin/python tools/benchmarks/importing.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CAPSULE = ROOT / "tests" / "data" / "lab" / "laguna-b70-record"
COPIES = 10


def wall(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    return time.perf_counter() - start


def make_folder(folder: Path, padded: bool) -> int:
    """Ten distinct capsules; their total size in bytes."""
    run = CAPSULE / "evidence" / "record-run"
    for n in range(COPIES):
        copy = shutil.copytree(CAPSULE, folder / f"laguna-{n:02d}")
        (copy / "copy.txt").write_text(f"copy {n}\n")
        if padded:
            (copy / "extra").mkdir()
            shutil.copyfile(run / "server.log", copy / "extra" / "server-log.bak")
            shutil.copyfile(run / "bench.json", copy / "extra" / "bench-json.bak")
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    registry = str(Path(sys.executable).parent / "registry")
    for padded in (False, True):
        measure(registry, padded)


def measure(registry: str, padded: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="registry-bench-import-") as tmp:
        root = Path(tmp)
        folder = root / "lab"
        size = make_folder(folder, padded)
        env = {**os.environ, "REGISTRY_KEYS_DIR": str(root / "keys"),
               "REGISTRY_HASH_CACHE": str(root / "hashes.sqlite"),
               "REGISTRY_HOME": str(root / "project" / ".registry"),
               "PYTHONPATH": str(ROOT)}
        subprocess.run([registry, "init", str(root / "project")], check=True, env=env,
                       capture_output=True)
        subprocess.run([registry, "keys", "init"], check=True, env=env, capture_output=True)
        startup = min(wall([sys.executable, "-c", "pass"], env) for _ in range(3))
        hashing = min(wall(["sha256sum", *map(str, sorted(p for p in folder.rglob("*")
                                                          if p.is_file()))], env)
                      for _ in range(3))
        first = wall([registry, "import", str(folder), "--each", "--json"], env)
        again = wall([registry, "import", str(folder), "--each", "--json"], env)
    mb = size / 1e6
    print(f"{COPIES} capsules, {mb:.2f} MB ({mb / COPIES:.3f} MB each)")
    print(f"import --each, new evidence:   {first:6.2f} s = {first / COPIES:.3f} s per capsule"
          f" = {first / mb:.3f} s per MB   (target <= 1 s per ~1 MB capsule)")
    print(f"import --each, same evidence:  {again:6.2f} s = {again / COPIES:.3f} s per capsule")
    print(f"baselines: python start-up {startup:.3f} s; sha256sum of the same bytes "
          f"{hashing:.3f} s (import/sha256sum = {first / hashing:.0f}x)")


if __name__ == "__main__":
    main()
