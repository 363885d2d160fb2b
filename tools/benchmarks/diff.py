#!/usr/bin/env python3
"""Diff: `registry diff A B --json` as a fresh process on an index of 10,000 records.

Target: under 0.3 s wall, without importing torch or vllm. The two records compared
are the lab's BF16/FP8 KV A/B (tests/ab_runs.py) sealed into a home that also holds
10,000 other records; the baseline is the bare Python start-up in the same run.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _store_bench():
    store_py = Path(__file__).with_name("store.py")
    spec = importlib.util.spec_from_file_location("bench_store", store_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run() -> list[tuple[str, float, str]]:
    from registry.seal import seal_run
    from tests.ab_runs import make_ab_run

    store = _store_bench()
    folder = Path(tempfile.mkdtemp(prefix="registry-bench-diff-"))
    saved = dict(os.environ)
    try:
        home = store.new_home(folder)
        store.fill(home, 10_000)
        ids = [seal_run(make_ab_run(folder / "runs", side), home=home).id
               for side in ("bf16", "fp8")]
        args = ("diff", ids[0][:12], ids[1][:12], "--json")
        wall = store.best(store.cli(*args), 5)
        python = store.best(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), 5)
        heavy = store.heavy_imports(*args)
        return [("registry diff A B --json (10,000 records)", wall,
                 f"s wall (target < 0.3; python start-up alone {python:.3f} s; "
                 f"torch/vllm/git imported: {heavy or 'none'})")]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    for name, value, explanation in run():
        print(f"{name:<52} {value:>9.3f}  {explanation}", flush=True)
