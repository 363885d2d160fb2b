"""The lab's benchmark rows (`bench.json`, `*-strict-performance.json`) as registry rows:
token ids with the arrival offset of each, nothing summarised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from registry.base.files import read_json
from registry.errors import InvalidInput
from registry.formats.rundir import Bench, BenchRow, SuiteRef
from registry.measure.physical import refuse_rows


def convert_bench(path: Path, suite_sha256: str | None = None) -> Bench:
    """`suite_sha256`: the suite file's digest where the lab names it elsewhere."""
    data = read_json(path, "benchmark rows")
    run = _object(data.get("run_identity"))
    suite_info = _object(run.get("suite"))
    suite = str(suite_info.get("suite_id") or _validity(data).get("suite_id") or "suite")
    try:
        rows = [_row(suite, i, raw) for i, raw in enumerate(data["rows"])]
        params = {k: run[k] for k in ("max_tokens", "seed", "request_extra") if k in run}
        suites = [SuiteRef(name=suite, sha256=suite_sha256, prompts=len(rows))]
        refuse_rows(rows, str(path))
        return Bench(api=str(run.get("api_mode", "completions")), model=str(run.get("model", "?")),
                     params=params, suites=suites, rows=rows)
    except (KeyError, TypeError, ValidationError) as e:
        raise InvalidInput(f"{path}: rows are not in the lab's bench format ({e!s:.200})") from None


def _validity(data: dict[str, Any]) -> dict[str, Any]:
    return _object(data.get("fresh_response_validity"))


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _row(suite: str, position: int, raw: dict[str, Any]) -> BenchRow:
    index = raw.get("prompt_index", position)
    return BenchRow(
        suite=suite, index=index, prompt_id=str(raw.get("prompt_id", index)),
        prompt_sha256=str(raw.get("prompt_sha256", "")), prompt_tokens=raw.get("prompt_tokens"),
        cached_tokens=raw.get("cached_tokens"), completion_tokens=raw.get("completion_tokens"),
        request_started_epoch_s=raw.get("request_started_epoch_s"), token_ids=raw["token_ids"],
        token_times_s=raw["token_id_offsets_s"], chunk_times_s=raw.get("chunk_offsets_s", []),
        text_sha256=raw.get("sha256"), error=raw.get("error"),
    )
