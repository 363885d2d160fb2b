"""The Prometheus text parser on the lab's real scrapes and crafted edge cases."""

from __future__ import annotations

import pytest

from registry.errors import InvalidInput
from registry.logs.prometheus import counter_diff, parse_prometheus, read_prometheus
from tests.conftest import FIXTURES

RUN = FIXTURES / "laguna-b70-record/evidence/record-run"


def test_real_scrapes_and_counter_differences() -> None:
    before = read_prometheus(RUN / "metrics-before-suite.prom")
    after = read_prometheus(RUN / "metrics-after-suite.prom")
    text = (RUN / "metrics-after-suite.prom").read_text()
    samples = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(after.samples) == len(samples)
    assert counter_diff(before, after, "vllm:spec_decode_num_drafts_total") == 1609
    assert counter_diff(before, after, "vllm:spec_decode_num_accepted_tokens_per_pos_total",
                        position="10") == 112
    info = after.find("vllm:cache_config_info")[0]
    assert info.labels["block_size"] == "64" and info.labels["cache_dtype"] == "bfloat16"
    assert info.labels["kv_cache_size_tokens"] == "136802"
    assert text.splitlines()[info.line - 1].startswith("vllm:cache_config_info{")


def test_escapes_timestamps_and_special_values() -> None:
    scrape = parse_prometheus('\n'.join([
        '# HELP x a "help" line',
        'm{path="C:\\\\dir",quote="say \\"hi\\"",nl="a\\nb"} 1.5 1700000000000',
        'plain 2', 'inf_gauge{a="b"} +Inf', 'nan_gauge NaN', '']))
    m = scrape.find("m")[0]
    assert m.labels == {"path": "C:\\dir", "quote": 'say "hi"', "nl": "a\nb"} and m.value == 1.5
    assert scrape.total("plain") == 2 and scrape.total("inf_gauge") == float("inf")
    assert scrape.total("missing") is None
    assert counter_diff(None, scrape, "plain") == 2


@pytest.mark.parametrize("line", ["metric{a=\"b\"}", "metric notanumber", "{} 1"])
def test_malformed_lines_are_a_clear_error(line: str) -> None:
    with pytest.raises(InvalidInput, match=r"metrics:1:"):
        parse_prometheus(line)
