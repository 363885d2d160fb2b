"""The line that says why an engine died, from real captured logs (no engine needed)."""

from __future__ import annotations

from pathlib import Path

from registry.executor.logtail import error_line
from tests.conftest import ROOT

RUNS = ROOT / "tests" / "data" / "cpu-runs"


def test_root_cause_of_the_captured_startup_crash() -> None:
    line = error_line(RUNS / "crashed-startup" / "server.log")
    assert line == "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints."


def test_a_clean_run_has_no_error_line() -> None:
    for lane in ("tiny-bf16-kv", "tiny-ngram", "tiny-hybrid-sliding"):
        assert error_line(RUNS / lane / "server.log") is None


def test_plain_error_lines_and_garbage(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"(APIServer pid=1) INFO 11-30 05:25:14 [a.py:1] fine\n"
                    b"(EngineCore pid=2) ERROR 11-30 05:25:15 [b.py:2] out of memory: 3 GiB\n"
                    b"\xff\xfe garbage \r tqdm 10%\r tqdm 20%\n")
    assert error_line(log) == "out of memory: 3 GiB"
    log.write_bytes(b"Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                    b"ModuleNotFoundError: No module named 'vllm'\n")
    assert error_line(log) == "ModuleNotFoundError: No module named 'vllm'"
    log.write_bytes(b"")
    assert error_line(log) is None
    assert error_line(tmp_path / "absent.log") is None
