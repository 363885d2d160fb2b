"""The own Prometheus parser (kept because it keeps line numbers for evidence) against
`prometheus_client`'s on real `/metrics` scrapes of the vLLM engine, and on the text
format's corner cases: both must read the same samples."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from registry.logs.prometheus import parse_prometheus

DATA = Path(__file__).parent / "data"
SCRAPES = sorted(DATA.rglob("*.prom"))


def theirs(text: str) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value)
                  for family in text_string_to_metric_families(text) for s in family.samples)


def ours(text: str) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value)
                  for s in parse_prometheus(text).samples)


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        x[:2] == y[:2] and (x[2] == y[2] or (math.isnan(x[2]) and math.isnan(y[2])))
        for x, y in zip(a, b, strict=True))


def test_there_are_real_scrapes() -> None:
    assert len(SCRAPES) >= 10


@pytest.mark.parametrize("path", SCRAPES, ids=lambda p: str(p.relative_to(DATA)))
def test_a_real_scrape_reads_the_same(path: Path) -> None:
    text = path.read_text()
    mine = ours(text)
    assert mine and same(mine, theirs(text))


@pytest.mark.parametrize("text", [
    '# HELP x A counter\n# TYPE x counter\nx_total{a="1"} 3.5\n',
    'g{path="C:\\\\dir",q="say \\"hi\\"",n="a\\nb"} 1\n',  # escapes in label values
    'g{a="x"} 2 1712345678000\n',  # a timestamp
    'g NaN\nh +Inf\ni -Inf\n',
    'g{a="1",} 7\n',  # a trailing comma
    '# TYPE h histogram\nh_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 0.3\nh_count 2\n',
])
def test_a_corner_of_the_text_format_reads_the_same(text: str) -> None:
    assert same(ours(text), theirs(text))
