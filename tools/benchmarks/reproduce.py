#!/usr/bin/env python3
"""What binding the checkpoint's content costs the resolver (seal, resolve, reproduce).

`model.manifest_sha256` hashes every release file of the checkpoint when it is on
disk. On a synthetic 1 GiB checkpoint (8 shards of 128 MiB) beside a captured CPU run:

- cold: resolving the run (log parse + manifest, files hashed on every core) vs
  `openssl dgst -sha256` over the same shards one after the other (throughput ratio;
  target >= 0.8; about 2 on two cores);
- warm: resolving again with the hash cache filled vs resolving without the
  checkpoint at all (the manifest's extra cost: one stat and one cache row per file;
  target <= 1.5x, a few ms);
- reproduce's environment check (platform, engine, engine tree, manifest from the
  cache), as a wall time in seconds.
Best-of-N wall times taken in this run; everything lives in a temp dir.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

MIB = 1024 * 1024
SHARDS, SHARD = 8, 128 * MIB
RUN = ROOT / "tests/data/cpu-runs/tiny-bf16-kv"


def best(fn: Callable[[], object], repeat: int = 3) -> float:
    """Best wall time of `repeat` calls (the least disturbed by the shared machine)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def checkpoint(folder: Path) -> Path:
    """config.json and SHARDS safetensors files of SHARD bytes each (zeros)."""
    folder.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "torch_dtype": "bfloat16", "hidden_size": 256, "num_hidden_layers": 4,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
              "vocab_size": 512}
    (folder / "config.json").write_text(json.dumps(config))
    for i in range(SHARDS):
        header = json.dumps({f"w{i}": {"dtype": "BF16", "shape": [SHARD // 2],
                                       "data_offsets": [0, SHARD]}}).encode()
        header += b" " * (-len(header) % 8)
        with open(folder / f"model-{i:05d}.safetensors", "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header)
            f.truncate(8 + len(header) + SHARD)  # zeros, written by the filesystem
    return folder


def run() -> list[tuple[str, float, str]]:
    from registry.resolve import resolve_run

    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as tmp:
        os.environ["REGISTRY_HASH_CACHE"] = str(Path(tmp) / "hashes.sqlite")
        ckpt = checkpoint(Path(tmp) / "tiny-llama")  # where the tiny-bf16-kv recipe looks
        shards = sorted(ckpt.glob("*.safetensors"))
        subprocess.run(["cat", *map(str, shards)], stdout=subprocess.DEVNULL, check=True)
        openssl = best(lambda: [subprocess.run(["openssl", "dgst", "-sha256", str(p)],
                                               capture_output=True, check=True)
                                for p in shards])
        time.sleep(2.1)  # files younger than 2 s are never cached (racily clean)

        def cold() -> None:
            Path(os.environ["REGISTRY_HASH_CACHE"]).unlink(missing_ok=True)
            resolve_run(RUN, checkpoint=ckpt)

        cold_s = best(cold)
        resolve_run(RUN, checkpoint=ckpt)  # fills the cache
        warm = best(lambda: resolve_run(RUN, checkpoint=ckpt), repeat=5)
        bare = best(lambda: resolve_run(RUN, checkpoint=ckpt / "config.json"), repeat=5)
        env_s = best(lambda: environment_check(ckpt), repeat=3)
        shutil.rmtree(ckpt)
    return [
        ("resolve_cold_vs_openssl", openssl / cold_s,
         f"1 GiB checkpoint: resolve {cold_s:.2f} s vs openssl {openssl:.2f} s (>= 0.8)"),
        ("resolve_warm_vs_no_checkpoint", warm / bare,
         f"cached manifest: {warm * 1000:.1f} ms vs {bare * 1000:.1f} ms (<= 1.5)"),
        ("environment_check_s", env_s, "reproduce's check before anything runs (cached)"),
    ]


def environment_check(ckpt: Path) -> None:
    """check_environment against a record made from the captured run."""
    from registry.executor.plan import preview
    from registry.formats.record import Predicate, RunInfo
    from registry.recipe import load_recipe
    from registry.reproduce.environment import check_environment
    from registry.resolve import resolve_run

    recipe = load_recipe(ROOT / "recipes/tiny-bf16-kv.toml")
    predicate = Predicate(identity=resolve_run(RUN, checkpoint=ckpt),
                          run=RunInfo(state="complete", sealed_at="now"))
    launch = preview(recipe, port=1, models_dir=ckpt.parent, cwd=ckpt.parent)
    check_environment(predicate, recipe, launch)


if __name__ == "__main__":
    for name, value, explanation in run():
        print(f"{name:<32} {value:>10.3f}  {explanation}")
