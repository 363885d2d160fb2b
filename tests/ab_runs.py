"""The lab's matched BF16/FP8 KV A/B on 4x B70, rebuilt as two run directories.

Each starts from the real Laguna record's server log, with the lines that differ
between the two runs set to the A/B's published figures (cache tokens per card
110,995 vs 221,990 at the same KV memory; kv_cache_dtype bfloat16 vs fp8_e4m3), and
raw benchmark rows whose per-row decode rates have the published medians
(48.980858 vs 46.956936 tok/s). FP8 was not bitwise BF16: 4 rows diverge at output
index 11.
"""

from __future__ import annotations

import json
from pathlib import Path

from registry.base.canonical import canonical_bytes
from registry.formats.rundir import Bench, BenchRow, SuiteRef
from registry.recipe import load_recipe
from registry.recipe.schema import KVCacheDtype
from tests.conftest import FIXTURES, ROOT

LOG = FIXTURES / "laguna-b70-record/evidence/record-run/server.log"
RECIPE = ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml"
SUITE_SHA256 = "9fdaacfdc4de59407a73cbe0d8130fa0f6abe91fed782e399a58adbc035ea638"
FACTORS = (0.8, 0.85, 0.9, 0.92, 0.95, 0.98, 1.0, 1.02, 1.05, 1.08, 1.1, 1.15, 1.2)
AB = {
    "bf16": {"kv": "bfloat16", "tokens": "110,995", "concurrency": "13.55x",
             "median": 48.980858, "diverged": ()},
    "fp8": {"kv": "fp8_e4m3", "tokens": "221,990", "concurrency": "27.10x",
            "median": 46.956936, "diverged": (0, 2, 5, 9)},
}


def _log(kv: str, tokens: str, concurrency: str) -> bytes:
    text = LOG.read_bytes()
    for old, new in (
        (b"'kv_cache_dtype': 'bfloat16'", f"'kv_cache_dtype': '{kv}'".encode()),
        (b"kv_cache_dtype=bfloat16", f"kv_cache_dtype={kv}".encode()),
        (b"GPU KV cache size: 136,802 tokens", f"GPU KV cache size: {tokens} tokens".encode()),
        (b"per request: 16.70x", f"per request: {concurrency}".encode()),
        (b"Available KV cache memory: 7.57 GiB", b"Available KV cache memory: 6.14 GiB"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    return text


def _rows(median: float, diverged: tuple[int, ...]) -> list[BenchRow]:
    rows = []
    for i, factor in enumerate(FACTORS):
        rate = median * factor
        tokens = [(7 * i + k) % 500 for k in range(128)]
        if i in diverged:
            tokens[11] = (tokens[11] + 1) % 500
        rows.append(BenchRow(suite="realistic-cold-v1", index=i, prompt_id=f"prompt-{i:02d}",
                             prompt_sha256=f"{i:064x}", cached_tokens=0,
                             completion_tokens=len(tokens), token_ids=tokens,
                             token_times_s=[0.5 + k / rate for k in range(len(tokens))],
                             text_sha256=f"{sum(tokens):064x}"))
    return rows


def make_ab_run(folder: Path, side: str) -> Path:
    spec = AB[side]
    run = folder / side
    run.mkdir(parents=True)
    (run / "server.log").write_bytes(_log(spec["kv"], spec["tokens"], spec["concurrency"]))
    recipe = load_recipe(RECIPE)
    recipe = recipe.model_copy(update={
        "precision": recipe.precision.model_copy(update={"kv_cache": KVCacheDtype(spec["kv"])}),
        "engine": recipe.engine.model_copy(
            update={"args": {**recipe.engine.args, "kv_cache_dtype": spec["kv"]}}),
    })
    (run / "recipe.json").write_bytes(canonical_bytes(recipe))
    bench = Bench(api="chat", model="laguna-s-2.1-int4", params={"max_tokens": 512},
                  suites=[SuiteRef(name="realistic-cold-v1", sha256=SUITE_SHA256, prompts=13)],
                  rows=_rows(spec["median"], spec["diverged"]))
    (run / "bench.json").write_text(bench.model_dump_json(by_alias=True))
    (run / "status.json").write_text(json.dumps({"state": "complete"}))
    return run
