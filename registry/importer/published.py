"""The lab's published figures, each beside the same figure re-derived from the raw rows.

Where the lab publishes (named aggregations over per-row values):
- a rows file's own `summary` and a `summary*.json`'s `primary_metric`: the decode rate
  over tokens 1-100 after the first token (the lab's `tok_s_1_100_after_ttft`, its
  legacy `100 / (t[99] - t[0])`) and `ttft_ms`, as median, mean, p10, min, max, stdev;
- `claims/*.json` (and a packet's `claim.json`): `claimed.tok_s` and `verification.tok_s`,
  labelled with the metric the claim states (registry/formats/metricwords.py) and
  re-derived only when its words name a formula and an aggregation the rows allow, at
  the precision the claim was written with.
A figure with no named formula (`tok_s_wall_full`, ...) is recorded, never re-derived.
A figure the rows do not reproduce (1e-9 relative) is a finding.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

from registry.formats.record import PublishedFigure
from registry.formats.rundir import BenchRow
from registry.importer.walk import load_json
from registry.measure.metrics import decode_rate, formula_text, p10
from registry.recipe.schema import MetricFormula

REL = 1e-9
AGGREGATIONS: dict[str, Callable[[Sequence[float]], float]] = {
    "median": statistics.median, "mean": statistics.fmean, "p10": p10,
    "min": min, "max": max, "stdev": statistics.stdev,
}
# summary key -> (metric, per-row formula or None when it has no named formula)
SERIES = {
    "tok_s_1_100_after_ttft": ("decode_tok_s", MetricFormula.legacy_100),
    "primary_metric": ("decode_tok_s", MetricFormula.legacy_100),
    "ttft_ms": ("ttft_ms", None),
    "tok_s_after_ttft_full": ("decode_tok_s_full", None),
    "tok_s_wall_full": ("wall_tok_s_full", None),
}
# a results JSON's top-level throughput (vLLM's benchmark: tokens / wall time of the run):
# key -> (metric, aggregation); recorded, never re-derived (no per-token timestamps)
SCALARS = {"mean_output_toks_per_second": ("output_tok_s", "mean"),
           "mean_total_toks_per_second": ("total_tok_s", "mean"),
           # the lab's own strict-gate summary (`results/summary-<date>.json`)
           "mean_output_tokens_per_second": ("output_tok_s", "mean"),
           "mean_total_tokens_per_second": ("total_tok_s", "mean")}
# a screen receipt's flat medians (`realistic_suite.median_tok_s_1_100_intervals_after_ttft`):
# key -> (metric, per-row formula or None), each a median over the suite's rows
MEDIANS = {
    "median_tok_s_1_100_intervals_after_ttft": ("decode_tok_s", MetricFormula.intervals_99),
    "median_tok_s_1_100_legacy_inclusive_events": ("decode_tok_s", MetricFormula.legacy_100),
    "median_tok_s_after_ttft_full": ("decode_tok_s_full", None),
    "median_tok_s_wall_full": ("wall_tok_s_full", None),
    "median_ttft_ms": ("ttft_ms", None),
}
ALIASES = {"median_tok_s_1_100_after_ttft": "median"}
CLAIM = "claim.json"  # the claim file a lab packet carries beside its evidence
ENGINE_TABLES = (".md", ".json", ".jsonl", ".txt")  # where a benchmark tool's table may be


def published_figures(capsule: Path, files: list[str], rows: list[BenchRow] | None
                      ) -> list[PublishedFigure]:
    out: list[PublishedFigure] = []
    for name in files:
        data = load_json(capsule / name)
        if not isinstance(data, dict):
            continue
        if PurePosixPath(name).parent.name == "claims" or PurePosixPath(name).name == CLAIM:
            out += _claims(name, data, rows)
            continue
        for top in ("summary", None):
            block = data.get(top) if top else data
            if isinstance(block, dict):
                out += _summary(name, top, block, rows)
        for top, block in figure_blocks(data):
            out += _medians(name, top, block, rows)
    return out


def engine_figures(capsule: Path, files: list[str]) -> list[PublishedFigure]:
    """Figures an engine's own benchmark tool publishes in the capsule's text files (a
    llama-bench table in a README or a `-o json` file): each engine plug-in reads its own."""
    from registry.engines.plugin import plugins

    out: list[PublishedFigure] = []
    for name in files:
        if PurePosixPath(name).suffix.lower() in ENGINE_TABLES:
            for plugin in plugins().values():
                out += plugin.published_figures(capsule / name, name)
    return out


def figure_blocks(data: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """The JSON object and each object directly under it that holds a screen's flat
    medians (MEDIANS): a screen receipt keeps one block per suite it ran."""
    blocks = [(None, data), *((k, v) for k, v in data.items() if isinstance(v, dict))]
    return [(top, block) for top, block in blocks if MEDIANS.keys() & block.keys()]


def _medians(source: str, top: str | None, block: dict[str, Any],
             rows: list[BenchRow] | None) -> list[PublishedFigure]:
    return [_figure(source, ".".join(p for p in (top, key) if p), metric, "median", formula,
                    float(block[key]), _per_row(metric, formula, rows), _relative)
            for key, (metric, formula) in MEDIANS.items() if _number(block.get(key))]


def recheck(figures: list[PublishedFigure], rows: list[BenchRow] | None
            ) -> list[PublishedFigure]:
    """Each figure re-derived again from `rows`: a record's stored verdict is never read
    back (diff calls this on a sealed record's rows)."""
    out = []
    for f in figures:
        formula = next((m for m in MetricFormula if f.formula == formula_text(m, 100)), None)
        claim = f.aggregation.startswith("claim")
        again = _figure(f.source, f.key, f.metric, f.aggregation, formula, f.value,
                        _per_row(f.metric, formula, rows), _as_written if claim else _relative)
        out.append(again.model_copy(update={"note": f.note}) if claim else again)
    return out


def _summary(source: str, top: str | None, block: dict[str, Any], rows: list[BenchRow] | None
             ) -> list[PublishedFigure]:
    out = [PublishedFigure(source=source, key=".".join(p for p in (top, key) if p),
                           metric=metric, aggregation=how, value=float(block[key]),
                           note="not re-derived: a benchmark's tokens / wall time, no "
                                "per-token timestamps")
           for key, (metric, how) in SCALARS.items() if _number(block.get(key))]
    for key, (metric, formula) in SERIES.items():
        stats = block.get(key)
        if not isinstance(stats, dict):
            continue
        values = _per_row(metric, formula, rows)
        for stat, value in stats.items():
            aggregation = ALIASES.get(stat, stat)
            if aggregation not in AGGREGATIONS or not _number(value):
                continue
            where = ".".join(p for p in (top, key, stat) if p)
            out.append(_figure(source, where, metric, aggregation, formula, float(value), values,
                               _relative))
    return out


def _claims(source: str, data: dict[str, Any], rows: list[BenchRow] | None
            ) -> list[PublishedFigure]:
    """Each figure under the metric its claim states: re-derived only when the words
    name the formula and the aggregation (never a guessed `100 / (t[99] - t[0])`)."""
    from registry.formats.metricwords import named

    out = []
    for part in ("claimed", "verification"):
        block = data.get(part)
        if not isinstance(block, dict) or not _number(block.get("tok_s")):
            continue
        metric = named(str(block.get("metric", "")))
        formula = next((m for m in MetricFormula if m.value == metric.formula), None)
        how = metric.aggregation if metric.aggregation in AGGREGATIONS else None
        key, value = f"{part}.tok_s", float(block["tok_s"])
        if formula is None or how is None:
            missing = "formula" if formula is None else f"aggregation ({metric.aggregation})"
            figure = PublishedFigure(source=source, key=key, metric="decode_tok_s",
                                     aggregation=f"claim: {metric.aggregation or 'unnamed'}",
                                     formula=metric.formula, value=value,
                                     note=f"not re-derived: the claim's metric names no "
                                          f"re-derivable {missing}")
        else:
            figure = _figure(source, key, "decode_tok_s", f"claim: {how}", formula, value,
                             _per_row("decode_tok_s", formula, rows), _as_written)
        out.append(figure.model_copy(update={"note": "; ".join(
            x for x in (metric.text[:200], figure.note) if x) or None}))
    return out


def _figure(source: str, key: str, metric: str, aggregation: str,
            formula: MetricFormula | None, value: float, values: list[float] | None,
            agree: Callable[[float, float], bool]) -> PublishedFigure:
    text = formula_text(formula, 100) if formula else ("1000 * t[0]" if metric == "ttft_ms"
                                                      else None)
    if values is None or text is None:
        why = "no raw rows in the capsule" if values is None or metric == "ttft_ms" \
            else "no named formula"
        return PublishedFigure(source=source, key=key, metric=metric, aggregation=aggregation,
                               formula=text, value=value, note=f"not re-derived: {why}")
    # a claim sealed before its metric's words were read says only "claim": a median
    fn = AGGREGATIONS.get("median" if aggregation == "claim" else
                          aggregation.removeprefix("claim: "))
    if fn is None:
        return PublishedFigure(source=source, key=key, metric=metric, aggregation=aggregation,
                               formula=text, value=value,
                               note="not re-derived: no rule for this aggregation")
    if len(values) < (2 if aggregation == "stdev" else 1):
        return PublishedFigure(source=source, key=key, metric=metric, aggregation=aggregation,
                               formula=text, value=value, note="not re-derived: too few rows")
    again = float(fn(values))
    return PublishedFigure(source=source, key=key, metric=metric, aggregation=aggregation,
                           formula=text, value=value, rederived=again, rows=len(values),
                           agrees=agree(value, again))


def _per_row(metric: str, formula: MetricFormula | None, rows: list[BenchRow] | None
             ) -> list[float] | None:
    if rows is None:
        return None
    ok = [r for r in rows if not r.error and r.token_times_s]
    if metric == "ttft_ms":
        return [1000 * r.token_times_s[0] for r in ok]
    if formula is None:
        return []
    return [x for r in ok if (x := decode_rate(r.token_times_s, formula)) is not None]


def _relative(published: float, again: float) -> bool:
    return math.isclose(published, again, rel_tol=REL, abs_tol=0.0)


def _as_written(published: float, again: float) -> bool:
    """A claim written with N decimals agrees when the rows round to it."""
    exponent = Decimal(repr(published)).as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    return bool(abs(again - published) <= 0.5 * 10.0 ** -places + REL * abs(published))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)

