"""The line shapes real vLLM logs take, one at a time (each copied from a published log of
the wild corpus, `../shared/fixtures/wild-logs`): every one yields its message, its process
and its values; a shape that only looks like a header mid-line yields nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.engines.vllm.logs import scan_log
from registry.engines.vllm.logs.messages import Kind

CONFIG = ("Initializing a V1 LLM engine (v0.22.0) with config: model='/m', "
          "tensor_parallel_size=2, dtype=torch.float16")


def scan(tmp_path: Path, *lines: str):
    path = tmp_path / "server.log"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    return scan_log(path)


@pytest.mark.parametrize(("line", "proc", "pid"), [
    # plain V1 header with a process prefix
    (f"(EngineCore_DP0 pid=7) INFO 07-26 17:45:09 [core.py:76] {CONFIG}", "EngineCore_DP0", 7),
    # ANSI-coloured process prefix (vLLM 0.10-0.13 on a terminal)
    (f"\x1b[1;36m(EngineCore_DP0 pid=941609)\x1b[0;0m INFO 09-30 18:29:03 [core.py:76] {CONFIG}",
     "EngineCore_DP0", 941609),
    # coloured level, time and place (vLLM's ColoredFormatter)
    (f"\x1b[1;36m(EngineCore pid=3)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m05-30 15:02:02\x1b[0m "
     f"\x1b[90m[core.py:112]\x1b[0m {CONFIG}", "EngineCore", 3),
    # a Kaggle notebook export: seconds elapsed and the output line number first
    (f"295.8s 291 (EngineCore pid=163) INFO 05-30 15:02:02 [core.py:112] {CONFIG}",
     "EngineCore", 163),
    # rank-named workers, and a Ray actor's prefix with its node address
    (f"\x1b[1;36m(VllmWorker rank=2 pid=3251)\x1b[0;0m INFO 07-21 19:37:02 [core.py:1] {CONFIG}",
     "VllmWorker rank=2", 3251),
    (f"(RayWorkerWrapper pid=12, ip=10.0.0.2) INFO 05-26 18:53:50 [core.py:1] {CONFIG}",
     "RayWorkerWrapper", 12),
    # V0 header: no brackets around file:line
    (f"INFO 11-18 17:10:54 llm_engine.py:249] {CONFIG}", None, None),
    # a condensed excerpt: the level, two spaces, the message
    (f"INFO  {CONFIG}", None, None),
])
def test_every_prefix_shape_gives_the_message(tmp_path: Path, line: str, proc: str | None,
                                              pid: int | None) -> None:
    fact = scan(tmp_path, line).first(Kind.engine_config)
    assert fact is not None
    assert (fact.proc, fact.pid, fact.text) == (proc, pid, CONFIG)
    assert fact.values["version"] == "0.22.0"


def test_v0_engine_lines(tmp_path: Path) -> None:
    s = scan(tmp_path,
             "INFO 11-18 17:10:46 api_server.py:585] vLLM API server version 0.6.4.post1",
             "INFO 11-18 17:10:46 api_server.py:586] args: Namespace(model='m', block_size=16)",
             "INFO 11-18 17:10:54 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) "
             "with config: model='m', dtype=torch.bfloat16",
             "INFO 05-26 18:53:50 [llm_engine.py:240] Initializing a V0 LLM engine "
             "(v0.8.5.post1) with config: model='m'",
             "INFO 11-18 17:11:01 distributed_gpu_executor.py:57] # GPU blocks: 31284, "
             "# CPU blocks: 4096")
    assert s.first(Kind.server_version).values["version"] == "0.6.4.post1"
    assert s.first(Kind.namespace).values["args"] == "model='m', block_size=16"
    assert [f.values["version"] for f in s.all(Kind.engine_config)] == ["0.6.4.post1",
                                                                          "0.8.5.post1"]
    assert s.first(Kind.kv_blocks).values["blocks"] == "31284"


def test_a_header_shape_mid_line_is_not_a_message(tmp_path: Path) -> None:
    s = scan(tmp_path, "the harness said: INFO  Using max model len 5",
             "echo INFO 11-18 17:10:54 Using max model len 6")
    assert s.first(Kind.max_model_len) is None


def test_ready_line_of_a_numbered_api_server(tmp_path: Path) -> None:
    s = scan(tmp_path, "(APIServer pid=1) INFO 09-30 18:37:06 [api_server.py:1971] Starting "
                       "vLLM API server 0 on http://localhost:24001",
             "(EngineCore_DP0 pid=2) INFO 09-30 18:37:07 [core.py:76] Using max model len 9")
    assert s.first(Kind.ready) is not None
    assert s.first(Kind.max_model_len) is None  # identity is fixed once ready


def test_coloured_and_condensed_errors_are_counted(tmp_path: Path) -> None:
    s = scan(tmp_path,
             "\x1b[1;36m(EngineCore_DP0 pid=5)\x1b[0;0m ERROR 09-30 18:29:03 [core.py:718] "
             "EngineCore failed to start.",
             "\x1b[31mERROR\x1b[0m \x1b[90m09-30 18:29:04\x1b[0m \x1b[90m[core.py:9]\x1b[0m boom",
             "ERROR  condensed failure")
    assert [e.text for e in s.errors] == ["EngineCore failed to start.", "boom",
                                         "condensed failure"]


def test_spec_lines_are_kept_apart_at_scrapes_and_restarts(tmp_path: Path) -> None:
    api = "(APIServer pid=1) INFO 07-26 17:48:02 [metrics.py:120] "
    spec = api + "SpecDecoding metrics: Mean acceptance length: 2.0, Accepted: {} tokens, " \
                 "Drafted: {} tokens"
    access = '(APIServer pid=1) INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK'
    s = scan(tmp_path, api + "Starting vLLM server on http://127.0.0.1:8000",
             spec.format(1, 10), access, spec.format(2, 20), spec.format(3, 30), access,
             spec.format(4, 40),
             "(EngineCore pid=2) INFO 07-26 17:49:00 [core.py:1] " + CONFIG,
             spec.format(5, 50))
    assert [(p.opened_by.kind if p.opened_by else None, p.opened_by.line if p.opened_by else 0,
             p.lines, p.accepted, p.drafted) for p in s.spec_phases] == [
        (None, 0, 1, 1, 10), ("metrics_scrape", 3, 2, 5, 50), ("metrics_scrape", 6, 1, 4, 40),
        ("restart", 8, 1, 5, 50)]
    assert s.spec is not None and (s.spec.accepted, s.spec.drafted) == (15, 150)
