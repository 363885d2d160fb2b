"""Measurements that cannot have happened: refused where rows enter the registry (a
`vllm bench serve` result, a lab's rows, a run directory at seal) and flagged by
`review` on records sealed before.

Time runs forwards from the request: a row's token and chunk arrival times are never
negative and never go back; in a `vllm bench serve` result a TTFT or an ITL is never
negative and the TTFT plus the ITLs (the last chunk's arrival) never passes the
request's end-to-end latency. Each refusal names the row and the first impossible
value; nothing is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from registry.errors import InvalidInput
from registry.formats.rundir import BenchRow

SLACK_S = 1e-6  # clocks are read in different places: a microsecond is not a paradox
HINT = "the measurement is corrupt or was edited: re-run it, or fix the file that wrote it"


def row_problem(row: BenchRow) -> str | None:
    """Why `row`'s times cannot be, or None."""
    for name, times in (("token_times_s", row.token_times_s),
                        ("chunk_times_s", row.chunk_times_s)):
        for i, t in enumerate(times):
            if not math.isfinite(t) or t < -SLACK_S:
                return f"{name}[{i}] is {t!r} s: before the request started"
            if i and t < times[i - 1] - SLACK_S:
                return (f"{name}[{i}] is {t!r} s, earlier than {name}[{i - 1}] "
                        f"({times[i - 1]!r} s): time went backwards")
    return None


def impossible_rows(rows: Sequence[BenchRow]) -> list[tuple[BenchRow, str]]:
    return [(r, why) for r in rows if (why := row_problem(r)) is not None]


def refuse_rows(rows: Sequence[BenchRow], source: str) -> None:
    """One clear refusal naming the first impossible row of `source`."""
    bad = impossible_rows(rows)
    if bad:
        row, why = bad[0]
        more = f" ({len(bad) - 1} more rows like it)" if len(bad) > 1 else ""
        raise InvalidInput(f"{source}: row {row.index} ({row.prompt_id}, suite {row.suite}): "
                           f"{why}{more}", hint=HINT)


def refuse_vllm_result(data: dict[str, Any], source: str) -> None:
    """The same rule on a `vllm bench serve --save-detailed` result's own lists."""
    latencies = data.get("latencies") if isinstance(data.get("latencies"), list) else None
    for i, (ttft, itls) in enumerate(zip(data["ttfts"], data["itls"], strict=True)):
        if data["errors"][i]:
            continue
        why = _request_problem(ttft, itls, latencies[i] if latencies and i < len(latencies)
                               else None)
        if why:
            raise InvalidInput(f"{source}: request {i}: {why}", hint=HINT)


def _request_problem(ttft: Any, itls: Any, latency: Any) -> str | None:
    if not _number(ttft) or ttft < -SLACK_S:
        return f"ttft {ttft!r} s is negative"
    gaps = itls if isinstance(itls, list) else []
    for j, gap in enumerate(gaps):
        if not _number(gap) or gap < -SLACK_S:
            return f"itls[{j}] {gap!r} s is negative"
    last = float(ttft) + sum(float(g) for g in gaps)
    if _number(latency) and last > float(latency) + SLACK_S:
        return (f"ttft + sum(itls) = {last:.6g} s passes the end-to-end latency "
                f"{float(latency):.6g} s")
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
