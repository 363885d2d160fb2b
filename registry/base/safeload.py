"""Parse untrusted JSON and TOML with limits, so that no input can crash a reader.

Every document the registry reads (recipes, run-directory files, bench rows, lab
capsules, checkpoint configs and safetensors headers, ledger statements and
envelopes) may be hostile. Python's parsers accept what the registry cannot use
safely: nesting thousands deep (a `RecursionError` in the parser or later in
pydantic), integers of thousands of digits (slow to convert, refused by canonical
JSON), `NaN`/`Infinity` (not JSON, and never a measurement), lone surrogates (they
fail only later, when written or printed). Here each is refused up front with a
`BadDocument`, a `ValueError`, so callers that already turn a `ValueError` into their
own error keep doing so.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_BYTES = 256 << 20  # a document larger than this is refused before it is parsed
MAX_DEPTH = 64  # nesting levels; the registry's own documents need fewer than ten
# 32: real tokenizer configs hold Hugging Face's "no limit", int(1e30), 31 digits
MAX_INT_DIGITS = 32
MAX_INT = 10**MAX_INT_DIGITS
SURROGATE = re.compile("[\ud800-\udfff]")


class BadDocument(ValueError):
    """A document refused before use; the message completes "the document is ..."."""


def loads_json(data: bytes | str, *, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON value in `data` (UTF-8), within the limits above."""
    _size(data, max_bytes)
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        value = json.loads(text, parse_constant=_constant)
    except UnicodeDecodeError as e:
        raise BadDocument(f"not UTF-8 text (byte {e.start})") from None
    except RecursionError:
        raise BadDocument(f"nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise BadDocument(f"not valid JSON ({e})") from None
    except BadDocument:
        raise
    except ValueError:  # Python's own limit on integer digits (4300)
        raise BadDocument(f"holding an integer of more than {MAX_INT_DIGITS} digits") from None
    check(value)
    return value


def loads_toml(data: bytes, *, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The TOML document in `data` (UTF-8), within the limits above."""
    import tomllib  # not imported by readers of JSON (record readers): 2.5 ms

    _size(data, max_bytes)
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise BadDocument(f"not UTF-8 text (byte {e.start})") from None
    except RecursionError:
        raise BadDocument(f"nested deeper than {MAX_DEPTH} levels") from None
    except tomllib.TOMLDecodeError as e:
        raise BadDocument(f"not valid TOML: {e}") from None
    check(document)
    return document


def check(value: Any) -> None:
    """Refuse nesting beyond MAX_DEPTH, out-of-range integers, non-finite floats and
    strings that are not Unicode text; iterative, so depth cannot exhaust the stack."""
    if not isinstance(value, dict | list):
        _scalar(value)
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadDocument(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            children: Any = [*item.keys(), *item.values()]
        elif len(item) > 16 and _numbers(item):  # short lists are cheaper walked
            continue
        else:
            children = item
        for child in children:  # scalars are checked here, never pushed: most of a file
            kind = type(child)
            if kind is str:
                if not child.isascii() and SURROGATE.search(child):
                    raise BadDocument("holding an unpaired surrogate (not Unicode text)")
            elif isinstance(child, dict | list):
                stack.append((child, depth + 1))
            else:
                _scalar(child)


def _numbers(items: list[Any]) -> bool:
    """True for a list of only ints or only floats (token ids, times: most of a bench
    file), checked at C speed; False for any other list, which is walked."""
    kinds = set(map(type, items))
    if kinds == {int}:
        if max(items) >= MAX_INT or min(items) <= -MAX_INT:
            raise BadDocument(f"holding an integer of more than {MAX_INT_DIGITS} digits")
        return True
    if kinds == {float}:
        if not all(map(math.isfinite, items)):
            raise BadDocument("holding NaN or an infinity (they are refused)")
        return True
    return False


def _scalar(item: Any) -> None:
    if isinstance(item, str):
        if not item.isascii() and SURROGATE.search(item):
            raise BadDocument("holding an unpaired surrogate (not Unicode text)")
    elif isinstance(item, float) and not math.isfinite(item):
        raise BadDocument(f"holding {item}: NaN or an infinity (they are refused)")
    elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= MAX_INT:
        raise BadDocument(f"holding an integer of more than {MAX_INT_DIGITS} digits")


def _size(data: bytes | str, max_bytes: int) -> None:
    if len(data) > max_bytes:
        raise BadDocument(f"{len(data):,} bytes, over the {max_bytes:,} byte limit")


def _constant(name: str) -> Any:
    raise BadDocument(f"holding {name} (NaN and infinities are refused)")
