"""Metrics re-derived from the raw rows of a real B70 record."""

from __future__ import annotations

import hashlib
import json

import pytest

from registry.formats.rundir import BenchRow
from registry.measure.metrics import decode_rate, suite_metrics
from registry.recipe.schema import MetricFormula
from tests.conftest import FIXTURES

CAPSULE_BENCH = FIXTURES / "laguna-b70-record/evidence/record-run/bench.json"


def _capsule_rows() -> list[BenchRow]:
    data = json.loads(CAPSULE_BENCH.read_text())
    return [BenchRow(suite="realistic-cold-v1", index=r["prompt_index"], prompt_id=r["prompt_id"],
                     prompt_sha256=r["prompt_sha256"], token_ids=r["token_ids"],
                     token_times_s=r["token_id_offsets_s"]) for r in data["rows"]]


def test_capsule_median_both_formulas() -> None:
    m = suite_metrics(_capsule_rows())
    assert m["decode_tok_s.median"].value == 101.94172124017027
    assert m["decode_tok_s.median"].formula == "median over unflagged rows of 99 / (t[99] - t[0])"
    assert m["decode_tok_s_other_formula.median"].value == 102.97143559613157
    assert m["decode_tok_s.median"].count == 13


def test_capsule_p10_matches_lab_convention() -> None:
    m = suite_metrics(_capsule_rows(), MetricFormula.legacy_100)
    assert m["decode_tok_s.p10"].value == pytest.approx(71.14888383025148, rel=1e-12)


def test_fixture_is_the_sealed_file() -> None:
    digest = hashlib.sha256(CAPSULE_BENCH.read_bytes()).hexdigest()
    assert digest == "a266b6ed28fa963456b3fc626a8bbafe104433e8b5dbc0b749973f6cd5e7f413"


def test_decode_rate_needs_the_whole_window() -> None:
    assert decode_rate([0.1 * i for i in range(99)], MetricFormula.intervals_99) is None
    even = [0.01 * i for i in range(100)]
    assert decode_rate(even, MetricFormula.intervals_99) == pytest.approx(100)
    assert decode_rate(even, MetricFormula.legacy_100) == pytest.approx(100 / 0.99)


def test_pooled_bootstrap_searches_every_resample_at_once_with_the_same_figures() -> None:
    """The binary search over all resamples gives, bit for bit, what one resample at a
    time gives (ties and rows never drawn included), at every percentile."""
    import numpy as np

    from registry.measure.interval import _draws, _pooled_at, _pooled_each

    rng = np.random.default_rng(7)
    for rows in (2, 3, 8, 40):
        sizes = rng.integers(1, 30, size=rows)
        values = np.sort(np.round(rng.exponential(5, size=int(sizes.sum())), 1))  # ties
        owner = rng.permutation(np.repeat(np.arange(rows), sizes))
        draws = _draws(rows, rng, 300)
        for p in (0, 1, 50, 90, 99, 100):
            each, at = _pooled_each(draws, owner, values, p), _pooled_at(draws, owner, values, p)
            assert each.tobytes() == at.tobytes(), (rows, p)


def test_percentiles_in_one_pass_are_each_percentile() -> None:
    import numpy as np

    from registry.measure.interval import percentile, percentiles

    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 10, 101, 1000):
        values = list(np.round(rng.exponential(3, size=n), 2))  # ties included
        ps = (0, 1, 10, 50, 90, 99, 99.9, 100)
        assert percentiles(values, ps) == [percentile(values, p) for p in ps]


def test_one_line_keeps_plain_text_and_escapes_the_rest() -> None:
    from registry.base.text import one_line

    assert one_line("plain ASCII, 42 tok/s") == "plain ASCII, 42 tok/s"
    assert one_line("a\x1b[2Jb\nc\u202ed\x7f") == "a\\e[2Jb\\nc\\u202ed\\x7f"
    assert one_line("naïve") == "naïve"  # printable, not ASCII: the regex decides
