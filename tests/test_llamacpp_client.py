"""The llama.cpp plug-in's side of a run: the launch plan for a llama.cpp recipe, the
streaming request and how llama-server's chunks (and its `timings`) become a row."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.engines.llamacpp.server import LLAMACPP, SERVER_VAR
from registry.engines.plugin import engine_for
from registry.errors import InvalidInput
from registry.executor.client import Stream, check
from registry.executor.plan import plan
from registry.recipe import load_recipe

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "recipes" / "tiny-llamacpp-q8-kv.toml"


def fake_server(tmp_path: Path) -> Path:
    binary = tmp_path / "llama-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return binary


def test_a_llama_recipe_plans_llama_server(tmp_path: Path) -> None:
    recipe = load_recipe(RECIPE)
    binary = fake_server(tmp_path)
    launch = plan(recipe, port=8123, models_dir=tmp_path, cwd=tmp_path, cache_root=tmp_path,
                  environ={SERVER_VAR: str(binary)})
    argv = launch.argv
    assert argv[0] == str(binary) and launch.engine == "llama.cpp"
    assert argv[argv.index("--cache-type-k") + 1] == "q8_0"
    assert argv[argv.index("--model") + 1] == f"{tmp_path}/tiny-llama-q8_0.gguf"
    assert argv[-7:] == ["--host", "127.0.0.1", "--port", "8123", "--metrics", "--verbosity",
                         "4"]


def test_no_binary_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no llama-server binary"):
        LLAMACPP.start_command(None, {SERVER_VAR: str(tmp_path / "missing")})


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(InvalidInput, match="no such engine"):
        engine_for("sglang")


def final(predicted: int, cache_n: int = 0) -> dict:
    return {"content": "", "tokens": [], "stop": True, "stop_type": "limit",
            "tokens_predicted": predicted, "tokens_evaluated": 7,
            "timings": {"cache_n": cache_n, "prompt_n": 7, "predicted_n": predicted,
                        "predicted_ms": 30.0, "predicted_per_second": 66.7}}


def test_chunks_become_a_row_and_timings_a_second_opinion() -> None:
    s = Stream()
    s.add(LLAMACPP.read_chunk({"content": "Hi", "tokens": [5, 6], "stop": False}), 0.1)
    s.add(LLAMACPP.read_chunk({"content": "!", "tokens": [7], "stop": False}), 0.2)
    s.add(LLAMACPP.read_chunk(final(3)), 0.3)
    assert s.token_ids == [5, 6, 7] and s.token_times == [0.1, 0.1, 0.2]
    assert s.finish_reason == "length" and s.usage["prompt_tokens_details"]["cached_tokens"] == 0
    assert check(s, allow_reuse=False) is None
    assert s.timings["predicted_per_second"] == 66.7


def test_the_server_s_count_must_match_the_stream() -> None:
    s = Stream()
    s.add(LLAMACPP.read_chunk({"content": "Hi", "tokens": [5, 6], "stop": False}), 0.1)
    s.add(LLAMACPP.read_chunk({**final(2), "tokens_predicted": 2,
                               "timings": {"cache_n": 0, "predicted_n": 3}}), 0.2)
    assert "timings say 3 tokens" in (check(s, allow_reuse=False) or "")


def test_prompt_reuse_is_seen_in_cache_n() -> None:
    s = Stream()
    s.add(LLAMACPP.read_chunk({"content": "a", "tokens": [1], "stop": False}), 0.1)
    s.add(LLAMACPP.read_chunk(final(1, cache_n=4)), 0.2)
    assert "prefix cache reuse: 4" in (check(s, allow_reuse=False) or "")


def test_the_request_asks_for_token_ids_and_a_cold_prompt() -> None:
    bench = load_recipe(RECIPE).benchmark
    body = LLAMACPP.request_body(bench, "m", "hello", 9)
    assert body["return_tokens"] is True and body["cache_prompt"] is False
    assert body["n_predict"] == 9 and body["stream"] is True
    with pytest.raises(InvalidInput, match="the client sets this key"):
        LLAMACPP.request_body(bench.model_copy(update={"request_extra": {"n_predict": 1}}),
                              "m", "x", 1)
