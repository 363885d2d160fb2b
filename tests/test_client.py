"""The benchmark client and suites, against a real local HTTP server replaying vLLM's
stream format (the real engine is exercised in tests/engine/)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from registry.engines.vllm.server import VLLM
from registry.errors import InvalidInput
from registry.executor.client import Stream, check, request_body, run_suites
from registry.executor.suite import Prompt, Suite, load_suite, parse_prompts
from registry.recipe import load_recipe
from registry.recipe.schema import BenchmarkSpec, SuiteSpec
from tests.conftest import ROOT

BENCH = BenchmarkSpec(suites=[SuiteSpec(name="s", path="s.jsonl")], max_tokens=4)


def _chunk(ids: list[int], text: str, finish: str | None = None) -> dict:
    return {"object": "text_completion", "choices": [
        {"index": 0, "text": text, "token_ids": ids, "finish_reason": finish}]}


USAGE = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9,
                                  "prompt_tokens_details": {"cached_tokens": 0}}}


class Replay(BaseHTTPRequestHandler):
    """Streams `server.script` (chunks and pauses) for every POST, or an HTTP error."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)  # type: ignore[attr-defined]
        status = self.server.status  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream" if status == 200 else "text/plain")
        self.end_headers()
        if status != 200:
            self.wfile.write(b"bad request: no such model")
            return
        try:
            for item in self.server.script:  # type: ignore[attr-defined]
                if isinstance(item, float):
                    time.sleep(item)
                    continue
                self.wfile.write(f"data: {json.dumps(item)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout test)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def replay() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Replay)
    server.script, server.status, server.bodies = [], 200, []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _suite(n: int = 2) -> Suite:
    return Suite(name="s", path="s.jsonl", sha256="0" * 64, max_tokens=4, data=b"",
                 prompts=[Prompt(id=f"p{i}", prompt=f"prompt {i}") for i in range(n)])


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_rows_keep_every_token_with_its_chunk_arrival(replay) -> None:
    replay.script = [_chunk([7], "a"), 0.05, _chunk([8, 9, 10], "bcd"), 0.05,
                     _chunk([], "", "length"), USAGE]
    rows, fault = run_suites(_url(replay), "m", BENCH, [_suite()], request_timeout=10)
    assert fault is None and [r.prompt_id for r in rows] == ["p0", "p1"]
    row = rows[0]
    assert row.error is None and row.token_ids == [7, 8, 9, 10]
    assert len(row.chunk_times_s) == 2  # chunks that carried tokens
    t = row.token_times_s
    assert t[1] == t[2] == t[3] == row.chunk_times_s[1]  # one chunk, one arrival time
    assert t[1] - t[0] >= 0.04
    assert row.text == "abcd" and row.text_sha256 == hashlib.sha256(b"abcd").hexdigest()
    assert row.prompt_sha256 == hashlib.sha256(b"prompt 0").hexdigest()
    assert (row.prompt_tokens, row.cached_tokens, row.completion_tokens) == (5, 0, 4)
    assert row.finish_reason == "length" and row.request_started_epoch_s > 1e9
    sent = replay.bodies[0]
    assert sent["return_token_ids"] is True and sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert (sent["max_tokens"], sent["temperature"], sent["seed"]) == (4, 0.0, 1)


def test_prefix_reuse_marks_the_row(replay) -> None:
    cached = {**USAGE, "usage": {**USAGE["usage"], "prompt_tokens_details": {"cached_tokens": 3}}}
    replay.script = [_chunk([1, 2, 3, 4], "x", "length"), cached]
    rows, fault = run_suites(_url(replay), "m", BENCH, [_suite(1)], request_timeout=10)
    assert fault is None  # the suite goes on; the run fails on the row
    assert "prefix cache reuse: 3 cached prompt tokens" in rows[0].error
    allowed = BENCH.model_copy(update={"allow_prefix_reuse": True})
    rows, _ = run_suites(_url(replay), "m", allowed, [_suite(1)], request_timeout=10)
    assert rows[0].error is None and rows[0].cached_tokens == 3


def test_http_error_is_a_row_error(replay) -> None:
    replay.status = 400
    rows, _ = run_suites(_url(replay), "m", BENCH, [_suite(1)], request_timeout=10)
    assert rows[0].error.startswith("HTTP 400: bad request")


def test_a_timeout_stops_the_suite_without_sending_the_rest(replay) -> None:
    replay.script = [_chunk([1], "x"), 2.0, _chunk([2], "y")]
    rows, fault = run_suites(_url(replay), "m", BENCH, [_suite(3)], request_timeout=0.3)
    assert len(rows) == 1 and len(replay.bodies) == 1
    assert rows[0].error == "timed out after 0.3 s"
    assert fault == "request 'p0' timed out after 0.3 s"


def test_engine_gone_is_a_transport_fault() -> None:
    from registry.executor.engine import free_port

    rows, fault = run_suites(f"http://127.0.0.1:{free_port()}", "m", BENCH, [_suite(2)],
                             request_timeout=5)
    assert len(rows) == 1 and rows[0].error.startswith("transport error: ConnectError")
    assert fault and "failed" in fault


def _add(stream: Stream, chunk: dict, at: float) -> None:
    stream.add(VLLM.read_chunk(chunk), at)


def test_chat_chunks() -> None:
    s = Stream()
    _add(s, {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}, 0.1)
    _add(s, {"choices": [{"index": 0, "delta": {"content": "Hi"}, "token_ids": [5, 6]}]}, 0.2)
    _add(s, {"choices": [], "usage": {"completion_tokens": 2, "prompt_tokens_details": None}}, 0.3)
    assert s.token_ids == [5, 6] and s.token_times == [0.2, 0.2] and "".join(s.text) == "Hi"
    assert check(s, allow_reuse=False).startswith("cached_tokens not reported")
    assert check(s, allow_reuse=True) is None


def test_usage_must_match_the_streamed_tokens() -> None:
    s = Stream()
    _add(s, _chunk([1, 2], "ab"), 0.1)
    _add(s, {"choices": [], "usage": {"completion_tokens": 3,
                                    "prompt_tokens_details": {"cached_tokens": 0}}}, 0.2)
    assert check(s, allow_reuse=False) == "usage says 3 completion tokens, the stream carried 2"


def test_server_error_chunk() -> None:
    s = Stream()
    _add(s, {"error": {"message": "boom", "code": 500}}, 0.1)
    assert check(s, allow_reuse=False).startswith("server error:")


def test_request_body_shapes() -> None:
    chat = BENCH.model_copy(update={"api": "chat", "request_extra": {"ignore_eos": True}})
    body = request_body(chat, "m", "hello", 9)
    assert body["messages"] == [{"role": "user", "content": "hello"}] and "prompt" not in body
    assert body["ignore_eos"] is True and body["max_tokens"] == 9
    clash = BENCH.model_copy(update={"request_extra": {"max_tokens": 5}})
    with pytest.raises(InvalidInput, match=r"request_extra\.max_tokens: the client sets this key"):
        request_body(clash, "m", "x", 1)


def test_suite_loads_and_checks_its_pin(tmp_path) -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    suite = load_suite(recipe, 0, ROOT / "recipes", {})
    assert suite.sha256 == recipe.benchmark.suites[0].sha256 and len(suite.prompts) == 8
    assert suite.max_tokens == 128
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "tiny-cold-v1.jsonl").write_text('{"id": "a", "prompt": "b"}\n')
    with pytest.raises(InvalidInput, match=r"benchmark.suites.0.sha256: .* the recipe pins"):
        load_suite(recipe, 0, tmp_path, {})


def test_suite_path_variables_and_missing_file(tmp_path) -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    spec = recipe.benchmark.suites[0].model_copy(update={"path": "${SUITES}/x.jsonl",
                                                         "sha256": None})
    moved = recipe.model_copy(update={"benchmark": recipe.benchmark.model_copy(
        update={"suites": [spec]})})
    with pytest.raises(InvalidInput, match=r"\$\{SUITES\} is not set"):
        load_suite(moved, 0, tmp_path, {})
    with pytest.raises(InvalidInput, match=r"benchmark\.suites\.0\.path: .*x\.jsonl"):
        load_suite(moved, 0, tmp_path, {"SUITES": str(tmp_path)})


@pytest.mark.parametrize(("text", "problem"), [
    ('{"id": "a", "prompt": "b"}\n\n', r":2: expected a JSON object"),
    ('{"id": "a"}\n', r":1: expected a JSON object"),
    ('{"id": "a", "prompt": "b", "extra": 1}\n', r":1: expected a JSON object"),
    ('["a", "b"]\n', r":1: expected"),
    ('{"id": "a", "prompt": "b"}\n{"id": "a", "prompt": "c"}\n', r"'a' appears more than once"),
    ("", "no prompts"),
])
def test_bad_suite_files(text: str, problem: str) -> None:
    with pytest.raises(InvalidInput, match=problem):
        parse_prompts(text.encode(), Path("s.jsonl"))


def test_prompt_count_must_match(tmp_path) -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    spec = recipe.benchmark.suites[0].model_copy(update={"prompts": 9})
    r = recipe.model_copy(update={"benchmark": recipe.benchmark.model_copy(
        update={"suites": [spec]})})
    with pytest.raises(InvalidInput, match="holds 8 prompts, the recipe expects 9"):
        load_suite(r, 0, ROOT / "recipes", {})


def test_long_context_suites_match_their_generator_and_the_gates() -> None:
    import subprocess
    import sys

    check = subprocess.run([sys.executable, str(ROOT / "tools" / "make_suites.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    recipe = load_recipe(ROOT / "recipes" / "laguna-s21-b70-long-context-service.toml")
    found = {"REGISTRY_SUITES": "/nonexistent"}
    ids = {p.id: p.prompt for i, s in enumerate(recipe.benchmark.suites) if s.name != "short-cold"
           for p in load_suite(recipe, i, ROOT / "recipes", found).prompts}
    for gate in recipe.quality.gates:
        assert all(p == "*" or p in ids for p in gate.prompts), gate
    needle = next(g for g in recipe.quality.gates if g.kind == "needle")
    assert needle.needle in ids["needle-32k"]
