"""Vega-Lite specifications of the report's charts: data plus a declarative encoding.

The page embeds each spec as JSON and the Vega bundle shipped beside the pages draws
it as SVG in the browser (docs/report.md says why Vega-Lite). Every spec is built from
raw rows or re-derived figures, never from a stored summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from registry.formats.rundir import BenchRow

Spec = dict[str, Any]
WIDTH = 560  # with its axis labels a chart fits an 800 px window
MAX_POINTS_PER_PROMPT = 2048  # a longer stream is thinned evenly; the ends are kept


def _spec(title: str, values: list[dict[str, Any]], **rest: Any) -> Spec:
    return {"title": title, "width": WIDTH, "height": 240, "data": {"values": values},
            "config": {"font": "system-ui, sans-serif", "legend": {"orient": "bottom"}},
            **rest}


def _thinned(times: Sequence[float]) -> list[tuple[int, float]]:
    step = max(1, -(-len(times) // MAX_POINTS_PER_PROMPT))
    picked = list(range(0, len(times), step))
    if picked[-1] != len(times) - 1:
        picked.append(len(times) - 1)
    return [(i, times[i]) for i in picked]


def timeline(rows: Sequence[BenchRow]) -> Spec:
    """One line per prompt: output token index against its arrival time after the request."""
    values = [{"prompt": f"{r.suite}/{r.prompt_id}", "token": i, "t": t}
              for r in rows if r.token_times_s for i, t in _thinned(r.token_times_s)]
    return _spec("token arrival per prompt", values, mark={"type": "line", "strokeWidth": 1.5},
                 encoding={
                     "x": {"field": "t", "type": "quantitative", "title": "seconds after request"},
                     "y": {"field": "token", "type": "quantitative", "title": "output token"},
                     "color": {"field": "prompt", "type": "nominal", "legend": None},
                     "detail": {"field": "prompt"},
                     "tooltip": [{"field": "prompt"}, {"field": "token"}, {"field": "t"}]})


ROW_COLOURS = {"domain": ["in the figures", "flagged: in no figure"],
               "range": ["#0969da", "#cf222e"]}


def distribution(rates: Sequence[tuple[str, str, float, str]], formula: str) -> Spec:
    """Decode rate of every row as one tick per row, per series (a record, or a side); a
    flagged row (burst, warm-up: `flags` names why) is drawn red and dashed-short, as
    every figure leaves it out."""
    values = [{"series": series, "prompt": prompt, "rate": rate, "flags": flags,
               "row": "flagged: in no figure" if flags else "in the figures"}
              for series, prompt, rate, flags in rates]
    return _spec(f"decode rate per prompt ({formula})", values,
                 height=max(60, 40 * len({v["series"] for v in values})),
                 mark={"type": "tick", "thickness": 2},
                 encoding={
                     "x": {"field": "rate", "type": "quantitative", "title": "tok/s (log scale)",
                           "scale": {"type": "log"}},
                     "y": {"field": "series", "type": "nominal", "title": None},
                     "color": {"field": "row", "type": "nominal", "title": "row",
                               "scale": ROW_COLOURS},
                     "size": {"condition": {"test": "datum.flags", "value": 10}, "value": 18},
                     "tooltip": [{"field": "prompt"}, {"field": "rate", "format": ".2f"},
                                 {"field": "row"}, {"field": "flags"}]})


QUALITY_COLOURS = {"domain": ["valid", "degraded", "not judged"],
                   "range": ["#1a7f37", "#cf222e", "#9a6700"]}
QUALITY_SHAPES = {"domain": QUALITY_COLOURS["domain"], "range": ["circle", "triangle-up",
                                                                 "diamond"]}


def history(points: Sequence[dict[str, Any]], teacher_changes: Sequence[dict[str, Any]]) -> Spec:
    """Each record's signed headline figure over time, with its 95% interval, coloured and
    shaped by its measurement quality (a degraded point is never drawn as a clean one);
    a rule where the lane's teacher changed."""
    x = {"field": "ran", "type": "temporal", "title": "run started",
         "axis": {"format": "%Y-%m-%d %H:%M", "labelAngle": -30}}
    quality = {"field": "quality", "type": "nominal", "title": "measurement",
               "scale": QUALITY_COLOURS}
    layers: list[Spec] = [{
        "data": {"values": [p for p in points if p.get("low") is not None]},
        "mark": {"type": "rule"},
        "encoding": {"x": x, "y": {"field": "low", "type": "quantitative"},
                     "y2": {"field": "high"}, "color": quality},
    }, {
        "data": {"values": list(points)},
        "mark": {"type": "line", "color": "#8c959f"},
        "encoding": {"x": x, "y": {"field": "rate", "type": "quantitative",
                                   "title": "decode tok/s (median, signed)",
                                   "scale": {"zero": False}}},
    }, {
        "data": {"values": list(points)},
        "mark": {"type": "point", "filled": True, "size": 60},
        "encoding": {
            "x": x, "y": {"field": "rate", "type": "quantitative"},
            "color": quality, "shape": {**quality, "scale": QUALITY_SHAPES},  # one legend
            "href": {"field": "href"},
            "tooltip": [{"field": "id"}, {"field": "ran", "type": "temporal",
                                          "format": "%Y-%m-%d %H:%M"},
                        {"field": "rate", "format": ".2f"}, {"field": "quality"}]},
    }]
    if teacher_changes:
        layers.append({
            "data": {"values": list(teacher_changes)},
            "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#b45309"},
            "encoding": {"x": {"field": "at", "type": "temporal"},
                         "tooltip": [{"field": "teacher"}, {"field": "at", "type": "temporal",
                                                           "format": "%Y-%m-%d %H:%M"}]},
        })
    spec = _spec("decode rate over time (bars: 95% interval; dashed: teacher changed)", [],
                 layer=layers)
    del spec["data"]
    return spec


def headlines(points: Sequence[dict[str, Any]]) -> Spec:
    """The index: each record's signed headline figure with its 95% interval, one row per
    lane and KV dtype (a row's records side by side), coloured and shaped by measurement
    quality (one legend: a degraded figure is never drawn as a clean one)."""
    values = [{**p, "row": f"{p['lane']} · kv {p['kv']}"} for p in points]
    y = {"field": "row", "type": "nominal", "title": None, "sort": "ascending",
         "axis": {"labelLimit": 0}}  # a lane is never cut (formats/display.py)
    quality = {"field": "quality", "type": "nominal", "title": "measurement",
               "scale": QUALITY_COLOURS}
    rows = len({v["row"] for v in values})
    spec = _spec("decode tok/s by lane and KV cache (signed median, 95% interval)",
                 [], height=max(80, 22 * rows), width=360, layer=[{
                     "data": {"values": [v for v in values if v.get("low") is not None]},
                     "mark": {"type": "rule"},
                     "encoding": {"y": y, "x": {"field": "low", "type": "quantitative"},
                                  "x2": {"field": "high"}, "color": quality}},
                     {"data": {"values": values},
                      "mark": {"type": "point", "size": 70, "filled": True},
                      "encoding": {
                          "y": y, "x": {"field": "rate", "type": "quantitative",
                                        "title": "decode tok/s", "scale": {"zero": False}},
                          "color": quality, "shape": {**quality, "scale": QUALITY_SHAPES},
                          "href": {"field": "href"},
                          "tooltip": [{"field": "id"}, {"field": "lane"}, {"field": "kv"},
                                      {"field": "rate", "format": ".2f"},
                                      {"field": "quality"}]}}])
    del spec["data"]
    return spec
