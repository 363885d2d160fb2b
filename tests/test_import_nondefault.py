"""The engine's `non-default args: {...}` line as typed values
(registry/engines/vllm/logs/nondefault.py),
on the lab's real logs and on hostile text."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.engines.vllm.logs.nondefault import MAX_TEXT, find_nondefault_args, parse_args_text
from tests.conftest import FIXTURES

LOGS = {
    "laguna-b70-record/evidence/record-run/server.log": (7, 4, "bfloat16"),
    "qwen38-flash-next-fp8-died-loading/server.log": (7, 4, None),
    "xpu-logs/qwen-27b-fp8-weights-tp2-server.log": (7, 2, None),
}


@pytest.mark.parametrize("name", LOGS)
def test_real_logs(name: str) -> None:
    line, tp, kv = LOGS[name]
    found = find_nondefault_args(FIXTURES / name)
    assert found is not None and found.line == line
    assert found.args["tensor_parallel_size"] == tp and found.args.get("kv_cache_dtype") == kv
    text = (FIXTURES / name).read_text(errors="replace").splitlines()[line - 1]
    assert "non-default args: " in text


def test_enum_members_become_their_names() -> None:
    args = parse_args_text("{'compilation_config': {'cudagraph_mode': "
                           "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'dynamic_shapes_config': "
                           "{'type': <DynamicShapesType.BACKED: 'backed'>}}, 'x': None}")
    assert args == {"compilation_config": {"cudagraph_mode": "FULL_AND_PIECEWISE",
                                           "dynamic_shapes_config": {"type": "BACKED"}},
                    "x": None}


@pytest.mark.parametrize("text", [
    "", "[1, 2]", "{'a': __import__('os').system('true')}", "{1: 2}", "{'a': 1",
    "{" * 5000 + "}" * 5000, "{'a': '" + "x" * MAX_TEXT + "'}", "{'a': 1e999999}",
])
def test_hostile_text_is_not_read(text: str) -> None:
    assert parse_args_text(text) in (None, {"a": float("inf")})


def test_a_log_without_the_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"\x00\xff" * 1000 + b"\nINFO non-default args: {'a'\n")
    assert find_nondefault_args(log) is None
    log.write_bytes(b"x" * (3 * MAX_TEXT) + b" non-default args: {'a': 1}\n")
    assert find_nondefault_args(log) is None  # a line that long is not read
