"""A claim's metric: kept verbatim, with a named formula only when its words name one.

The lab states metrics in words ("typical decode rate, first 100 words of a fresh
answer", "class-balanced median of input-class medians; 99-interval decode", "vLLM
bench output tok/s, mean of 4 runs"). A formula is attached only when the words say
it: an explicit `N / (t[a] - t[b])`, or "99-interval" (the lab's name for
`99 / (t[99] - t[0])`), "legacy 100" or "first 100 tokens" (its legacy
`100 / (t[99] - t[0])`); the aggregation only when the words name one. Words are
not tokens: "first 100 words" names no formula. Nothing is
guessed: "typical decode rate" names no formula, so none is given.
"""

from __future__ import annotations

import re

from pydantic import Field

from registry.base.model import Frozen

_EXPLICIT = re.compile(r"(\d+)\s*/\s*\(\s*t\[(\d+)\]\s*-\s*t\[(\d+)\]\s*\)")
_INTERVAL = re.compile(r"\b99[- ]interval\b", re.IGNORECASE)
_LEGACY = re.compile(r"\blegacy[- ]100\b|\b100[- ]interval\b|\bfirst 100 tokens\b",
                     re.IGNORECASE)
# (words, aggregation): the first that matches names it; order: most specific first.
_AGGREGATIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"class-balanced median", re.I), "median-of-prompt-class-medians"),
    (re.compile(r"bench output tok/?s|output_throughput", re.I), "vllm-bench-output-throughput"),
    (re.compile(r"print_timing|eval rate", re.I), "mean-of-llama.cpp-eval-rates"),
    (re.compile(r"\bsuite[- ]high\b|\bsuite's high\b", re.I), "max"),
    (re.compile(r"\bmean\b|\baverage\b", re.I), "mean"),
    (re.compile(r"\bmedian\b|middle value", re.I), "median"),
)


class ClaimMetric(Frozen):
    """The metric as stated, and what its words name (None: they name nothing)."""

    text: str = Field(description="verbatim, as the claimant wrote it")
    formula: str | None = Field(None, description="per-row formula the words name")
    aggregation: str | None = Field(None, description="aggregation the words name")


def named(text: str) -> ClaimMetric:
    """`text` with the formula and aggregation its words name, if any."""
    formula = None
    if m := _EXPLICIT.search(text):
        formula = f"{m.group(1)} / (t[{m.group(2)}] - t[{m.group(3)}])"
    elif _INTERVAL.search(text):
        formula = "99 / (t[99] - t[0])"
    elif _LEGACY.search(text):
        formula = "100 / (t[99] - t[0])"
    aggregation = next((name for words, name in _AGGREGATIONS if words.search(text)), None)
    return ClaimMetric(text=text, formula=formula, aggregation=aggregation)


def label(metric: ClaimMetric) -> str:
    """How a figure under this metric is labelled: its words, then what they name."""
    named_parts = [p for p in (metric.aggregation, metric.formula) if p]
    return metric.text + (f" [{'; '.join(named_parts)}]" if named_parts else "")
