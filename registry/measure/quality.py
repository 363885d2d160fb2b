"""Which rows a figure can trust, and whether the run as a whole measured cleanly.

A row is left out of the decode figures when its stream arrived in a burst (the client
read many tokens at once, so their arrival times say nothing about the engine) or when
it warmed the engine up. The rules, in docs/measurement.md:

- arrivals: a row's tokens grouped by identical arrival time (one network read or one
  chunk). Each arrival after the first has a gap (time since the previous arrival) and
  a token count (more than one under speculative decoding, or when reads merge).
- the run's step `tau`: the median gap over every arrival of every row in the suite
  whose gap is at least `FLOOR_S` (gaps under the floor are shorter than any engine
  step: both arrivals were already in the socket buffer). Its width `kappa`: the p90
  of tokens per arrival over the paced arrivals (gap >= tau / COLLAPSE).
- burst tokens: every token of an arrival whose gap is under max(FLOOR_S, tau /
  COLLAPSE); of any other arrival, the tokens beyond what its gap explains,
  `max(0, tokens - kappa * max(1, SLACK * gap / tau))`.
- a row arrived in bursts when its burst tokens exceed `BURST_SHARE` of its decode
  window's tokens after the first: its arrival times compress the window's span, so
  its decode rate overstates the engine.
- warm-up: the leading rows in send order whose TTFT exceeds `WARMUP_FACTOR` x the
  median TTFT of the later rows.
- a run is `degraded` when any row arrived in bursts, or when fewer than `MIN_ROWS`
  rows are left for the decode figures.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from registry.formats.figures import Pace, Quality, RowFlag, RowQuality
from registry.formats.rundir import BenchRow

FLOOR_S = 50e-6  # no engine step is this short; closer arrivals were buffered together
COLLAPSE = 10.0  # an arrival this many times sooner than the run's step was buffered
SLACK = 2.0  # a gap explains up to this many times the tokens the run's step gives
BURST_SHARE = 0.10  # of the window's tokens after the first
WARMUP_FACTOR = 3.0
MIN_ROWS = 5


def arrivals(times: Sequence[float]) -> list[tuple[float, int]]:
    """(gap since the previous arrival, tokens) for each arrival after the first."""
    out: list[tuple[float, int]] = []
    previous = times[0] if times else 0.0
    for t in times[1:]:
        if t == previous and out:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        elif t == previous:  # tokens sharing the first arrival: no gap before them
            out.append((0.0, 1))
        else:
            out.append((t - previous, 1))
            previous = t
    return out


def pace(rows: Sequence[Sequence[float]]) -> Pace | None:
    gaps = [gap for times in rows for gap, _ in arrivals(times) if gap >= FLOOR_S]
    if not gaps:
        return None
    tau = statistics.median(gaps)
    widths = sorted(n for times in rows for gap, n in arrivals(times) if gap >= tau / COLLAPSE)
    return Pace(step_s=tau, width=float(widths[int(0.9 * (len(widths) - 1))]))


def burst_tokens(times: Sequence[float], run: Pace | None) -> float:
    excess = 0.0
    for gap, n in arrivals(times):
        if run is None or gap < max(FLOOR_S, run.step_s / COLLAPSE):
            excess += n
        else:
            excess += max(0.0, n - run.width * max(1.0, SLACK * gap / run.step_s))
    return excess


def _warmup(rows: Sequence[BenchRow], ok: list[int]) -> set[int]:
    """Positions of the leading rows (send order) whose TTFT is WARMUP_FACTOR x the
    later rows' median."""
    order = sorted(ok, key=lambda i: (rows[i].request_started_epoch_s or 0.0, rows[i].round,
                                      rows[i].index))
    out: set[int] = set()
    for n, i in enumerate(order[:-1]):
        rest = statistics.median(rows[j].token_times_s[0] for j in order[n + 1:])
        if rows[i].token_times_s[0] <= WARMUP_FACTOR * rest:
            break
        out.add(i)
    return out


def assess(rows: Sequence[BenchRow], window: int) -> Quality:
    """Flag each row of one suite (every round) and judge the suite's measurement quality."""
    ok = [i for i, r in enumerate(rows) if not r.error and r.token_times_s]
    windows = {i: rows[i].token_times_s[:window] for i in ok}
    run = pace(list(windows.values()))
    warm = _warmup(rows, ok)
    judged = []
    for i, r in enumerate(rows):
        flags, excess, seen = [], 0.0, 0
        if i not in windows:
            flags.append(RowFlag.error)
        else:
            times = windows[i]
            excess, seen = burst_tokens(times, run), len(set(times))
            if len(r.token_times_s) < window:
                flags.append(RowFlag.short)
            if len(times) > 1 and excess > BURST_SHARE * (len(times) - 1):
                flags.append(RowFlag.burst)
            if i in warm:
                flags.append(RowFlag.warmup)
        judged.append(RowQuality(index=r.index, round=r.round, prompt_id=r.prompt_id,
                                 flags=flags, burst_tokens=round(excess, 3), arrivals=seen))
    return _verdict(judged, run)
def _verdict(judged: list[RowQuality], run: Pace | None) -> Quality:
    burst = [q.index for q in judged if RowFlag.burst in q.flags]
    warm = [q.index for q in judged if RowFlag.warmup in q.flags]
    used = sum(1 for q in judged if not q.flags)
    reasons = []
    if burst:
        reasons.append(f"{len(burst)} of {len(judged)} rows arrived in bursts (the client "
                       f"read their tokens together): left out of the decode figures")
    if used < MIN_ROWS:
        reasons.append(f"{used} rows left for the decode figures, fewer than {MIN_ROWS}")
    return Quality(state="degraded" if reasons else "valid", reasons=reasons,
                   pace=run, used=used, burst=burst, warmup=warm, rows=judged)


def usable(rows: Sequence[BenchRow], quality: Quality) -> list[BenchRow]:
    """The rows the decode figures use: no flag at all (`quality` of these same rows)."""
    return [r for r, q in zip(rows, quality.rows, strict=True) if not q.flags]
