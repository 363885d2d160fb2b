"""Per-start disturbance evidence and the rule that marks a start disturbed.

An engine start's speed on a GPU is decided on the host: the kept H200 captures
(tests/data/gpu-runs/, docs/measurement.md "Disturbed starts") show starts of one
compiled lane at 286-362 tok/s with the GPU 69-73% busy while decoding and others above
400 tok/s at 97-100%, the SM clock at 1,980 MHz in both. So each start keeps what tells
them apart: the GPU's utilisation, power and SM clock over the samples inside its suite
window, its row spread (IQR of its rows' decode rates over their median) and its
token-stream digest (which kernel variant it landed on, which does not explain speed).

The rule (thresholds derived in docs/measurement.md and re-derived by
tests/test_disturbance.py): a start is disturbed when its GPU was busy less than
`BUSY_FLOOR_PCT` of the suite window while decoding, or, where no samples cover it, when
its rows spread more than `SPREAD_CEILING`. The floor errs on the side that costs a start,
not a figure: a start under it is kept out (one at 74% that ran at full speed was), a
slow start above it would be kept in.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import statistics
from collections.abc import Sequence
from typing import Protocol

from registry.formats.rundir import BenchRow
from registry.measure.evidence import StartEvidence
from registry.measure.metrics import decode_rates
from registry.recipe.schema import MetricFormula

BUSY_FLOOR_PCT = 75.0  # above every slow kept start (69-73%); one at 74% ran full speed
SPREAD_CEILING = 0.10  # IQR / median of a start's row rates; see docs/measurement.md
MIN_SAMPLES = 4  # one second of nvidia-smi samples (250 ms): fewer say nothing


class Sample(Protocol):
    """What a GPU sample gives (registry.executor.gpu.GpuSample has these fields)."""

    @property
    def at(self) -> str: ...
    @property
    def utilization_pct(self) -> float | None: ...
    @property
    def power_w(self) -> float | None: ...
    @property
    def sm_mhz(self) -> float | None: ...


def suite_window(rows: Sequence[BenchRow]) -> tuple[float, float] | None:
    """(first request sent, last token arrived), epoch seconds; None without send times."""
    spans = [(r.request_started_epoch_s, r.request_started_epoch_s
              + (r.token_times_s[-1] if r.token_times_s else 0.0))
             for r in rows if r.request_started_epoch_s is not None]
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def sample_epoch(at: str) -> float | None:
    """nvidia-smi's timestamp (`2026/12/02 01:15:29.732`, the host's clock, UTC on the
    GPU hosts) as epoch seconds; None when it is not one."""
    try:
        when = dt.datetime.strptime(at.strip(), "%Y/%m/%d %H:%M:%S.%f")
    except ValueError:
        return None
    return when.replace(tzinfo=dt.UTC).timestamp()


def stream_digest(rows: Sequence[BenchRow]) -> str:
    """sha256 over the rows' token ids in (round, index) order: starts that decoded the
    same tokens share it."""
    h = hashlib.sha256()
    for r in sorted(rows, key=lambda r: (r.round, r.index)):
        h.update((",".join(map(str, r.token_ids)) + ";").encode())
    return h.hexdigest()


def row_spread(rates: Sequence[float]) -> float | None:
    """IQR over median of the rates (None under 4: no quartiles to speak of)."""
    if len(rates) < 4:
        return None
    q1, _, q3 = statistics.quantiles(rates, n=4, method="inclusive")
    return (q3 - q1) / statistics.median(rates)


def start_evidence(start: int, rows: Sequence[BenchRow], samples: Sequence[Sample],
                   formula: MetricFormula, window: int, gpu_bound: bool = True,
                   probe: tuple[float | None, float | None] = (None, None)) -> StartEvidence:
    """One start's evidence from its rows and the GPU samples (any superset of its window:
    a lease's whole capture or the start's own); `probe`: its host probe (CPU loop s,
    memory GiB/s)."""
    rates = decode_rates(rows, formula, window)
    inside = _inside(samples, suite_window(rows))
    util = [s.utilization_pct for s in inside if s.utilization_pct is not None]
    power = [s.power_w for s in inside if s.power_w is not None]
    clock = [s.sm_mhz for s in inside if s.sm_mhz is not None]
    enough = len(util) >= MIN_SAMPLES
    evidence = StartEvidence(
        start=start, rows=len(rates), figure=statistics.median(rates) if rates else None,
        spread=row_spread(rates), samples=len(inside),
        busy_pct=statistics.median(util) if enough else None,
        power_w=statistics.fmean(power) if enough and power else None,
        sm_mhz=statistics.median(clock) if enough and clock else None,
        probe_cpu_s=probe[0], probe_gib_s=probe[1], stream=stream_digest(rows))
    return evidence.model_copy(update={"disturbed": disturbance(evidence, gpu_bound)})


def disturbance(e: StartEvidence, gpu_bound: bool = True) -> str | None:
    """Why the rule marks the start disturbed, or None: utilisation where samples cover a
    GPU-bound start, else (or also) a row spread above the ceiling."""
    if gpu_bound and e.busy_pct is not None and e.busy_pct < BUSY_FLOOR_PCT:
        return f"host disturbed (GPU {e.busy_pct:.0f}% busy while decoding)"
    if e.spread is not None and e.spread > SPREAD_CEILING:
        return f"host disturbed (rows spread {100 * e.spread:.1f}% IQR/median)"
    return None


def record_evidence(rows: Sequence[BenchRow], samples_by_start: dict[int, Sequence[Sample]],
                    formula: MetricFormula, window: int, gpu_bound: bool = True,
                    probes: dict[int, tuple[float | None, float | None]] | None = None
                    ) -> list[StartEvidence]:
    """Each start of a record (`BenchRow.start`), with the samples and probe kept for it."""
    return [start_evidence(k, [r for r in rows if r.start == k], samples_by_start.get(k, ()),
                           formula, window, gpu_bound, (probes or {}).get(k, (None, None)))
            for k in sorted({r.start for r in rows})]


def _inside(samples: Sequence[Sample], span: tuple[float, float] | None) -> list[Sample]:
    if span is None:
        return []
    low, high = span
    return [s for s in samples if (t := sample_epoch(s.at)) is not None and low <= t <= high]
