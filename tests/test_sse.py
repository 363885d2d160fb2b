"""The stream parser against each framing case of the server-sent events standard."""

from __future__ import annotations

import pytest

from registry.executor.sse import EventParser


def parse(*reads: bytes) -> list[tuple[float, str]]:
    p = EventParser()
    out = []
    for at, data in enumerate(reads):
        out += p.feed(data, float(at))
    return out + p.close(float(len(reads)))


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(end: bytes) -> None:
    stream = b"data: {\"a\":1}" + end + end + b"data: [DONE]" + end + end
    assert parse(stream) == [(0.0, '{"a":1}'), (0.0, "[DONE]")]


def test_data_without_a_space_and_with_two() -> None:
    assert parse(b"data:x\n\ndata:  y\n\n") == [(0.0, "x"), (0.0, " y")]


def test_the_last_event_without_a_blank_line_is_kept() -> None:
    assert parse(b"data: a\n\ndata: b") == [(0.0, "a"), (1.0, "b")]
    assert parse(b"data: a\n\ndata: b\n") == [(0.0, "a"), (1.0, "b")]


def test_comments_and_other_fields_are_ignored() -> None:
    stream = b": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: z\n\n"
    assert parse(stream) == [(0.0, "z")]


def test_multi_line_data_joins_with_lf() -> None:
    assert parse(b"data: one\ndata: two\ndata\n\n") == [(0.0, "one\ntwo\n")]


def test_a_crlf_split_across_reads_is_one_line_end() -> None:
    assert parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [(1.0, "a"), (2.0, "b")]


def test_an_event_is_stamped_when_its_blank_line_arrives() -> None:
    assert parse(b"da", b"ta: x\n", b"\n") == [(2.0, "x")]


def test_utf8_split_across_reads() -> None:
    text = "données".encode()
    assert parse(b"data: " + text[:3], text[3:] + b"\n\n") == [(1.0, "données")]


def test_a_blank_line_without_data_dispatches_nothing() -> None:
    assert parse(b"\n\n: c\n\nevent: x\n\n") == []
