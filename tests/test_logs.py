"""The streaming vLLM log parser on the real lab logs: facts, line numbers, aggregates.

Every expected figure is re-derived here from the raw lines with a plain loop, never
copied from the parser's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from registry.engines.vllm.logs import scan as parser
from registry.engines.vllm.logs import scan_log
from registry.engines.vllm.logs.messages import Kind
from tests.conftest import FIXTURES

LAGUNA = FIXTURES / "laguna-b70-record/evidence/record-run/server.log"
QWEN = FIXTURES / "xpu-logs/qwen-27b-fp8-weights-tp2-server.log"
MARKERS = {
    "projections": r"Prepared Laguna DFlash FP8 W8A16 draft projections: count=(?P<count>\d+)",
    "topology": r"Captured audited breakable cudagraph .*graphs=(?P<graphs>\d+), "
                r"eager_breaks=(?P<eager_breaks>\d+)",
}


def lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", "replace").split("\n")


def test_every_fact_points_at_a_line_that_holds_its_text() -> None:
    scan = scan_log(LAGUNA, MARKERS)
    raw = lines(LAGUNA)
    facts = scan.facts + [m for marker in scan.markers for m in marker.first]
    assert len(facts) > 40
    for fact in facts:
        assert fact.text.split("\r")[0][:60] in raw[fact.line - 1], (fact.kind, fact.line)
    assert scan.lines == len(raw) - 1 and not scan.cut_off  # the file ends with a newline
    assert scan.bytes == LAGUNA.stat().st_size


def test_laguna_identity_facts() -> None:
    scan = scan_log(LAGUNA)
    assert [f.values["arch"] for f in scan.all(Kind.architecture)] == [
        "LagunaForCausalLM", "DFlashLagunaForCausalLM"]
    unknown = {f.values["name"] for f in scan.all(Kind.unknown_env)}
    expected = {m.group(1) for line in lines(LAGUNA)
                if (m := re.search(r"Unknown vLLM environment variable detected: (\S+)", line))}
    assert unknown == expected and len(unknown) == 13
    capacity = scan.first(Kind.kv_capacity)
    assert capacity is not None and capacity.values["tokens"] == "136,802"
    assert scan.first(Kind.kv_concurrency).values["concurrency"] == "16.70"
    assert scan.first(Kind.kv_memory).values["gib"] == "7.57"
    in_use = {f.proc: f.values["gib"] for f in scan.all(Kind.kv_memory_in_use)}
    assert in_use == {"Worker_TP0_EP0": "7.57", "Worker_TP1_EP1": "7.55",
                      "Worker_TP2_EP2": "7.08", "Worker_TP3_EP3": "7.55"}
    config = scan.first(Kind.engine_config)
    assert config.proc == "EngineCore" and config.values["version"].startswith("0.1.dev1267")
    assert scan.first(Kind.graph_capture).values["what"] == "mixed prefill-decode, PIECEWISE"
    assert scan.first(Kind.expert_parallel).values == {"rank": "0", "size": "4"}
    assert scan.first(Kind.ready) is not None and scan.engine_restarts == 0


def test_markers_counted_per_rank_with_their_values() -> None:
    scan = scan_log(LAGUNA, MARKERS)
    by_name = {m.name: m for m in scan.markers}
    ranks = {f"Worker_TP{i}_EP{i}" for i in range(4)}
    assert by_name["projections"].counts == dict.fromkeys(ranks, 1)
    assert by_name["projections"].values == {"count": ["31"]}
    assert by_name["topology"].counts == dict.fromkeys(ranks, 1)
    assert by_name["topology"].values == {"graphs": ["146"], "eager_breaks": ["145"]}


def test_a_marker_never_matches_the_process_prefix() -> None:
    scan = scan_log(LAGUNA, {"label": r"Worker_TP0_EP0", "start": r"^Prepared Laguna"})
    counts = {m.name: m.counts for m in scan.markers}
    assert counts["label"] == {}  # the label is in every prefix, in no message
    assert sum(counts["start"].values()) == 4


def test_spec_decoding_and_kv_usage_sums_match_a_plain_loop() -> None:
    raw = lines(LAGUNA)
    spec = [re.search(r"Accepted: (\d+) tokens, Drafted: (\d+) tokens", line)
            for line in raw if "SpecDecoding metrics" in line]
    usage = [float(m.group(1)) for line in raw
             if (m := re.search(r"KV cache usage: ([\d.]+)%", line))]
    scan = scan_log(LAGUNA)
    assert scan.spec is not None
    assert (scan.spec.lines, scan.spec.accepted, scan.spec.drafted) == (
        len(spec), sum(int(m.group(1)) for m in spec), sum(int(m.group(2)) for m in spec))
    assert scan.kv_usage_peak is not None and float(scan.kv_usage_peak.values["pct"]) == max(usage)
    assert f"KV cache usage: {max(usage)}%" in raw[scan.kv_usage_peak.line - 1]


def test_qwen_log_other_version_and_prefixless_lines() -> None:
    scan = scan_log(QWEN)
    assert scan.first(Kind.engine_config).values["version"] == "0.27.2rc1.dev77+gac7509e2b"
    assert scan.first(Kind.kv_capacity).values == {
        "device": "GPU", "tokens": "59,904", "len": "33,024", "concurrency": "1.81"}
    assert scan.first(Kind.kv_memory_explicit).values["gib"] == "2.0"
    assert len(scan.all(Kind.unknown_env)) == 7
    assert scan.errors == []  # `[ERROR]` docstring lint from transformers is not a log level
    assert scan.spec is None


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_chunk_boundaries_change_nothing(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    whole = scan_log(LAGUNA, MARKERS)
    monkeypatch.setattr(parser, "CHUNK", chunk)
    assert scan_log(LAGUNA, MARKERS) == whole


def test_file_and_line_of_the_logger_are_never_matched(tmp_path: Path) -> None:
    renamed = re.sub(rb"\[[\w.]+\.py:\d+\]", b"[moved_elsewhere.py:1]", LAGUNA.read_bytes())
    path = tmp_path / "server.log"
    path.write_bytes(renamed)
    before, after = scan_log(LAGUNA, MARKERS), scan_log(path, MARKERS)
    assert [(f.kind, f.line, f.values) for f in after.facts] == [
        (f.kind, f.line, f.values) for f in before.facts]
    assert after.markers == before.markers


def test_a_second_engine_start_after_ready_is_counted_not_merged(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_bytes(LAGUNA.read_bytes() * 3)
    scan, once = scan_log(path), scan_log(LAGUNA)
    assert scan.engine_restarts == 2
    assert [f for f in scan.facts if f.kind != "restart"] == once.facts
    restart = scan.first("restart")
    assert restart is not None and restart.line == once.first(Kind.engine_config).line + len(
        lines(LAGUNA)) - 1
    assert scan.spec is not None and scan.spec.lines == 3 * once.spec.lines
