"""The limits every untrusted JSON and TOML document is parsed within."""

from __future__ import annotations

import json

import pytest

from registry.base.safeload import MAX_DEPTH, BadDocument, loads_json, loads_toml


@pytest.mark.parametrize("data, why", [
    (b"[" * 5000 + b"]" * 5000, "nested deeper"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested deeper"),
    (b'{"a": ' * 100 + b"1" + b"}" * 100, "nested deeper"),
    (b"[" + b"9" * 400 + b"]", "more than 32 digits"),
    (b"[" + b"9" * 5000 + b"]", "more than 32 digits"),
    (b'{"x": [1, "a", -' + b"9" * 40 + b"]}", "more than 32 digits"),
    (b"[NaN]", "NaN"), (b'{"x": -Infinity}', "Infinity"), (b"[1.0, 1e999]", "infinity"),
    (b'["\\ud800"]', "surrogate"), (b'{"\\udfff": 1}', "surrogate"),
    (b"\xff\xfe{}", "not UTF-8"), (b"{", "not valid JSON"),
])
def test_refused_json(data, why) -> None:
    with pytest.raises(BadDocument, match=why):
        loads_json(data)


def test_size_limit() -> None:
    with pytest.raises(BadDocument, match="byte limit"):
        loads_json(b"[1, 2, 3]", max_bytes=8)


def test_accepted_json_is_what_json_reads() -> None:
    value = {"rows": [list(range(1000)), [0.5, 1e300, -2.0]], "ok": [True, None, "é", 10**19],
             "deep": json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))}
    data = json.dumps(value).encode()
    assert loads_json(data) == json.loads(data)


@pytest.mark.parametrize("text, why", [
    (b"x = nan", "nan"), (b"x = [1.0, -inf]", "inf"), (b"x = " + b"9" * 40, "digits"),
    (b"x = " + b"[" * 3000 + b"]" * 3000, "nested deeper"), (b"x = \xff", "not UTF-8"),
    (b"x = 1\nx = 2", "not valid TOML"),
])
def test_refused_toml(text, why) -> None:
    with pytest.raises(BadDocument, match=why):
        loads_toml(text)
