"""A long log's runtime part scanned in several processes gives exactly the one-pass scan.

The log is the real Laguna record repeated (restarts, KV usage, speculative decoding,
markers on four ranks) with runtime errors and interleaved tracebacks spread through
it, so the part boundaries of every worker count fall inside tracebacks and between
a process's lines.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from registry.engines.vllm.logs import scan as parser
from registry.engines.vllm.logs import scan_log
from tests.test_logs import LAGUNA, MARKERS


def runtime_faults(rng: random.Random, n: int) -> bytes:
    out = []
    for i in range(n):
        pid = rng.choice([11, 12, 13])
        head = f"(Worker_TP{pid - 11} pid={pid}) ERROR 07-26 18:00:{i % 60:02d} [w.py:1] "
        out.append(f"{head}request {rng.randrange(40)} failed: timeout")  # repeats: deduplicated
        out.append(f"{head}Traceback (most recent call last):")
        for frame in range(rng.randrange(1, 30)):
            out.append(f'{head}  File "/x/m{frame}.py", line {frame}, in f')
            if rng.random() < 0.2:  # another process prints in the middle
                out.append(f"(APIServer pid=1) INFO 07-26 18:00:00 [a.py:1] KV cache usage: "
                           f"{rng.uniform(0, 99):.1f}%")
        out.append(f"{head}RuntimeError: fault {i}")
    return ("\n".join(out) + "\n").encode()


def split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split any rest of the log, right after the block in which the server is ready."""
    monkeypatch.setattr(parser, "SPLIT_MIN", 1)
    monkeypatch.setattr(parser, "CHUNK", 4096)


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(7)
    laguna = LAGUNA.read_bytes()
    path = tmp_path_factory.mktemp("split") / "server.log"
    path.write_bytes(laguna + b"".join(laguna + runtime_faults(rng, 40) for _ in range(6))
                     + b"(APIServer pid=1) INFO cut off mid-li")
    return path


@pytest.mark.parametrize("workers", [2, 3, 5, 8])
def test_a_split_scan_equals_the_one_pass_scan(long_log: Path, workers: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    whole = scan_log(long_log, MARKERS, workers=1)
    assert whole.engine_restarts == 6 and whole.cut_off and whole.error_lines > 400
    assert len(whole.errors) == parser.MAX_ERRORS and len(whole.exceptions) == 5
    split(monkeypatch)
    calls: list[int] = []
    real = parser._scan_split

    def spy(scanner, stream, start: int, parts: int) -> None:
        calls.append(parts)
        real(scanner, stream, start, parts)

    monkeypatch.setattr(parser, "_scan_split", spy)
    assert scan_log(long_log, MARKERS, workers=workers) == whole
    assert calls == [workers]  # the split did run


def test_a_traceback_open_at_a_part_end_is_followed_into_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    laguna = LAGUNA.read_bytes()
    frames = "".join(f'  File "/x/m{i}.py", line {i}, in f\n' for i in range(1500))
    path = tmp_path / "server.log"
    path.write_bytes(laguna + b"Traceback (most recent call last):\n" + frames.encode()
                     + b"KeyError: 'boom'\n")
    split(monkeypatch)
    scan = scan_log(path, workers=4)
    assert [e.text for e in scan.exceptions] == ["KeyError: 'boom'"]
    assert scan.exceptions[0].line == scan.lines
    assert scan == scan_log(path, workers=1)


def test_a_small_rest_is_not_split(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("split a log smaller than SPLIT_MIN")

    monkeypatch.setattr(parser, "_scan_split", refuse)
    assert scan_log(LAGUNA, MARKERS, workers=4).markers
