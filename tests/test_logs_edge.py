"""The parser on crafted edge cases: fused tqdm bars, a cut-off line, invalid UTF-8,
binary garbage, tracebacks with and without prefixes, over-long lines."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from registry.engines.vllm.logs import scan as parser
from registry.engines.vllm.logs import scan_log
from registry.engines.vllm.logs.messages import Kind

HEAD = "(EngineCore_DP0 pid=7) INFO 07-26 17:47:13 [kv_cache_utils.py:2178] "
ERR = "(EngineCore_DP0 pid=7) ERROR 07-26 17:47:14 [core.py:708] "


def write(tmp_path: Path, data: str | bytes) -> Path:
    path = tmp_path / "server.log"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def test_fused_tqdm_bar_gives_one_fact_per_process(tmp_path: Path) -> None:
    bar = "".join(f"\rCapturing CUDA graphs (mixed prefill-decode, FULL): {p}%|##| {p}/100"
                  for p in (0, 50, 100))
    log = write(tmp_path, f"(Worker_TP0 pid=3) {bar}\n(Worker_TP1 pid=4) {bar}\n")
    facts = scan_log(log).all(Kind.graph_capture)
    assert [(f.proc, f.line, f.values["what"]) for f in facts] == [
        ("Worker_TP0", 1, "mixed prefill-decode, FULL"), ("Worker_TP1", 2,
                                                           "mixed prefill-decode, FULL")]


def test_a_log_cut_off_mid_line_keeps_its_last_line(tmp_path: Path) -> None:
    log = write(tmp_path, f"{HEAD}boot\n{HEAD}CPU KV cache size: 427,008 tokens, Maximum "
                          "concurrency for 1,024 tokens per request: 417.00x")
    scan = scan_log(log)
    assert scan.cut_off and scan.lines == 2
    assert scan.first(Kind.kv_capacity).values["tokens"] == "427,008"


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    bad = HEAD.encode() + b"Resolved architecture: Llama\xff\xfeForCausalLM\n"
    fact = scan_log(write(tmp_path, bad)).first(Kind.architecture)
    assert fact is not None and fact.values["arch"] == "Llama\ufffd\ufffdForCausalLM"


def test_binary_garbage_gives_an_empty_scan(tmp_path: Path) -> None:
    garbage = random.Random(4).randbytes(3 << 20)
    scan = scan_log(write(tmp_path, garbage), {"m": r"count=(?P<n>\d+)"})
    assert scan.empty and scan.bytes == len(garbage)
    assert scan.lines == garbage.count(b"\n") + (not garbage.endswith(b"\n"))


def test_empty_log(tmp_path: Path) -> None:
    scan = scan_log(write(tmp_path, b""))
    assert scan.empty and scan.bytes == 0 and scan.lines == 0 and not scan.cut_off


def test_prefixless_traceback_interleaved_with_other_processes(tmp_path: Path) -> None:
    log = write(tmp_path, "\n".join([
        f"{HEAD}boot",
        "Traceback (most recent call last):",
        "(Worker pid=9) INFO 07-26 17:47:13 [w.py:1] unrelated worker line",
        '  File "/x/api_server.py", line 5, in main',
        "    raise RuntimeError('Engine core initialization failed')",
        "RuntimeError: Engine core initialization failed. See root cause above.",
        "",
    ]))
    scan = scan_log(log)
    assert [(e.line, e.text) for e in scan.exceptions] == [
        (6, "RuntimeError: Engine core initialization failed. See root cause above.")]


def test_logger_traceback_error_lines_and_chaining(tmp_path: Path) -> None:
    log = write(tmp_path, "\n".join([
        f"{ERR}EngineCore failed to start.",
        f"{ERR}Traceback (most recent call last):",
        f'{ERR}  File "/x/core.py", line 9, in run',
        f"{ERR}ValueError: head_dim 16 is not supported",
        f"{ERR}",
        f"{ERR}During handling of the above exception, another exception occurred:",
        f"{ERR}Traceback (most recent call last):",
        f'{ERR}  File "/x/core.py", line 12, in run',
        f"{ERR}RuntimeError: worker died",
        f"{HEAD}a message that quotes ERROR 07-26 17:47:14 inside it",
        "(APIServer pid=1) ERROR:    Exception in ASGI application",
        "",
    ]))
    scan = scan_log(log)
    assert [e.text for e in scan.exceptions] == ["ValueError: head_dim 16 is not supported",
                                                  "RuntimeError: worker died"]
    assert [e.text for e in scan.errors] == [
        "EngineCore failed to start.", "ValueError: head_dim 16 is not supported",
        "During handling of the above exception, another exception occurred:",
        "RuntimeError: worker died", "Exception in ASGI application"]


def test_traceback_split_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(["Traceback (most recent call last):", *(
        f'  File "/x/m{i}.py", line {i}, in f' for i in range(50)), "KeyError: 'boom'", ""])
    monkeypatch.setattr(parser, "CHUNK", 16)
    assert [e.text for e in scan_log(write(tmp_path, text)).exceptions] == ["KeyError: 'boom'"]


def test_an_over_long_line_is_cut_not_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parser, "CHUNK", 1024)
    monkeypatch.setattr(parser, "MAX_LINE", 4096)
    log = write(tmp_path, "x" * 100_000 + f"\n{HEAD}Resolved architecture: A\n")
    scan = scan_log(log)
    assert scan.first(Kind.architecture).values["arch"] == "A"
    assert scan.first(Kind.architecture).line == 2


def test_marker_ranks_are_named_by_the_rank_the_process_reports(tmp_path: Path) -> None:
    log = write(tmp_path, "\n".join([
        "(Worker pid=5) INFO 07-26 17:46:02 [p.py:1] world_size=2 rank=1 local_rank=1 x",
        "(Worker pid=6) INFO 07-26 17:46:02 [p.py:1] world_size=2 rank=0 local_rank=0 x",
        "(Worker pid=5) INFO 07-26 17:46:03 [m.py:1] marker here",
        "(Worker pid=6) INFO 07-26 17:46:03 [m.py:1] marker here",
        "(Worker_TP0 pid=6) INFO 07-26 17:46:04 [m.py:1] marker here",
        "",
    ]))
    counts = scan_log(log, {"m": "marker here"}).markers[0].counts
    assert counts == {"rank 1": 1, "Worker_TP0": 2}  # one process, before and after its rename
