"""`vllm bench serve --save-result --save-detailed` JSON as a run directory's bench rows.

vLLM keeps, per request: `ttfts` (s), `itls` (s, one per chunk after the first),
`latencies`, `output_lens` (from the usage report), `start_times` (its perf_counter),
`errors` and `generated_texts`. A row gets chunk arrival times `ttft + cumsum(itl)`
(relative to its start, as the registry's own client stamps them); per-token times only
when every chunk carried one token (`output_lens == chunks`), since vLLM does not keep
token ids. A result whose times cannot be (a negative TTFT or ITL, ITLs summing past
the end-to-end latency) is refused (registry/measure/physical.py). Every figure is then
re-derived from these rows like any run's (registry.measure.metrics); TTFT, TPOT, ITL
and E2EL agree with vLLM's printed summary.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from pathlib import Path
from typing import Any

from registry.base.files import write_bytes, write_model
from registry.base.secrets import redact_bytes, scan_file
from registry.errors import InvalidInput
from registry.formats import rundir
from registry.formats.rundir import Bench, BenchRow, RunState, RunStatus, SuiteRef

DETAILED = ("ttfts", "itls", "output_lens", "start_times", "errors")
PARAMS = ("backend", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts",
          "request_rate", "burstiness", "max_concurrency", "date")


def read_result(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InvalidInput(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: expected a JSON object")
    missing = [k for k in DETAILED if not isinstance(data.get(k), list)]
    if missing:
        raise InvalidInput(f"{path}: no {', '.join(missing)}",
                           hint="save it with vllm bench serve --save-result --save-detailed")
    if len({len(data[k]) for k in DETAILED}) != 1:
        raise InvalidInput(f"{path}: the per-request lists differ in length")
    return data


def _row(data: dict[str, Any], i: int, suite: str) -> BenchRow:
    text = (data.get("generated_texts") or [""] * (i + 1))[i] or ""
    error = data["errors"][i] or None
    n = int(data["output_lens"][i] or 0)
    chunks = [] if error else list(itertools.accumulate(
        [float(data["ttfts"][i]), *(float(x) for x in data["itls"][i])]))
    return BenchRow(
        suite=suite, index=i, prompt_id=f"request-{i}", prompt_sha256="",
        prompt_tokens=(data.get("input_lens") or [None] * (i + 1))[i], completion_tokens=n,
        request_started_epoch_s=float(data["start_times"][i]),
        token_times_s=chunks if len(chunks) == n else [], chunk_times_s=chunks, text=text,
        text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), error=error)


def bench_from_result(data: dict[str, Any], suite: str) -> Bench:
    rows = [_row(data, i, suite) for i in range(len(data["ttfts"]))]
    return Bench(api="vllm-bench-serve", model=str(data.get("model_id") or ""),
                 params={k: data[k] for k in PARAMS if k in data},
                 suites=[SuiteRef(name=suite, prompts=len(rows))], rows=rows)


def import_result(result: Path, server_log: Path, out_dir: Path, *, suite: str = "vllm-bench",
                  recipe: Path | None = None) -> Bench:
    """Write a run directory (server.log, bench.json, the result itself, status.json, the
    recipe when given) that `registry seal` seals like any run."""
    from registry.measure.physical import refuse_vllm_result

    data = read_result(result)
    refuse_vllm_result(data, str(result))  # before anything is written
    bench = bench_from_result(data, suite)
    if not server_log.is_file():
        raise InvalidInput(f"{server_log}: no such server log",
                           hint="the vllm serve output of the benchmarked server is the evidence")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InvalidInput(f"{out_dir}: already exists and is not empty")
    copies = {rundir.SERVER_LOG: server_log, "vllm-bench-result.json": result,
              **({rundir.RECIPE_TOML: recipe} if recipe is not None else {})}
    # a private key (the signing key given as --log) is refused before anything is
    # written; other secrets are copied redacted (registry/base/secrets.py)
    found = {name: scan_file(path, str(path)) for name, path in copies.items()}
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, path in copies.items():
        if found[name]:
            write_bytes(out_dir / name, redact_bytes(path.read_bytes(), str(path))[0])
        else:
            shutil.copyfile(path, out_dir / name)
    write_model(out_dir / rundir.BENCH, bench)
    write_model(out_dir / rundir.STATUS, RunStatus(state=RunState.complete))
    return bench
