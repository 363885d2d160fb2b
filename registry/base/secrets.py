"""The one secret scanner: what in a recipe, a run folder, a capsule, an engine log or a
bench import must never be signed, since a statement can never leave an append-only
ledger.

Four kinds, each found line by line:
- `private-key`: a PEM private key block (the home's own signing key above all). Never
  redacted and kept: the input is refused, naming the file and line.
- `name`: a value given under a secret's name, `NAME=value`, `NAME: value`,
  `'name': 'value'` or `"NAME": ["value"]` (an environment dump, an `engine.env`, vLLM's
  `non-default args` line): names ending in TOKEN (not a tokenizer's `bos_token` ...),
  holding SECRET, PASSWORD or PASSWD, ending in API_KEY, APIKEY, ACCESS_KEY or
  PRIVATE_KEY, or starting with AWS_. A variable reference (`${HF_TOKEN}`) is no secret.
- `url-userinfo`: the password of `scheme://user:password@host`.
- `token`: the shape of a common token: `hf_...` (Hugging Face), `sk-...` (OpenAI and
  others), `ghp_`/`gho_`/`ghs_`/`ghu_`/`ghr_`/`github_pat_...` (GitHub), `xox?-...`
  (Slack), `AKIA...` (AWS access key id).

`redact` replaces each secret's value by `REDACTED` (quotes and separators kept, so a
JSON or TOML file stays one) and says what it replaced, where and why; `findings` only
looks. Which input is redacted and which refused is docs/trust.md's table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from registry.base.redaction import Redaction
from registry.errors import Refused

REDACTED = "REDACTED"
PEM_KEY = re.compile(r"-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----")
SECRET_NAME = re.compile(
    r"(?i)^(?:aws_.*|.*(?:secret|password|passwd).*|.*(?:api_?key|access_key|private_key)"
    r"|.*[_.-]token)$")
# names ending in TOKEN that count tokens or name a tokenizer's own (`bos_token`)
TOKENIZER_NAMES = re.compile(
    r"(?i)^(?:max_.*|.*(?:bos|eos|pad|unk|sep|cls|mask|special|adapter|bonus)_token)$")
# what follows a secret's name: `=` or `:`, then a quoted value, a list of them, or a word
ASSIGNED = re.compile(r"""['"]?[ \t]*[=:][ \t]*"""
                      r"""(?P<value>\[[^\]\n]*\]|'[^'\n]*'|"[^"\n]*"|[^\s,;}\])'"]+)""")
# what follows an option: `--api-key X`, `--api-key=X`, in argv JSON `"--api-key", "X"`
OPTION_VALUE = re.compile(r"""(?:=|['"][ \t]*,[ \t]*['"]|[ \t]+)(?P<value>[^\s'",\]]+)""")
QUOTED = re.compile(r"""'([^'\n]*)'|"([^"\n]*)\"""")
USERINFO = re.compile(r"[^/\s:@'\"]+:(?P<password>[^/\s@'\"]+)@")  # after `scheme://`
# the shapes of common tokens, each found by its literal prefix first
TOKENS = {
    "hf_": ("a Hugging Face token (hf_...)", re.compile(r"hf_[A-Za-z0-9]{30,}")),
    "sk-": ("an API key (sk-...)", re.compile(r"sk-[A-Za-z0-9_-]{20,}")),
    **{p: ("a GitHub token (gh?_...)", re.compile(p + r"[A-Za-z0-9]{30,}"))
       for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")},
    "github_pat_": ("a GitHub token (gh?_...)", re.compile(r"github_pat_[A-Za-z0-9_]{22,}")),
    "xox": ("a Slack token (xox?-...)", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}")),
    "AKIA": ("an AWS access key id (AKIA...)", re.compile(r"AKIA[0-9A-Z]{16}(?![0-9A-Z])")),
}
# the words every secret's name holds: found with str.find (C speed), then judged
NAME_WORDS = ("token", "secret", "passw", "api_key", "api-key", "apikey", "access_key",
              "access-key", "private_key", "private-key", "aws_")
NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
Span = tuple[int, int, str, str, str]  # start, end, replacement, kind, why


def secret_name(name: str) -> bool:
    """Whether a variable or key of this name holds a secret."""
    return bool(SECRET_NAME.match(name)) and not TOKENIZER_NAMES.match(name)


def _is_value(text: str, name: str = "") -> bool:
    """A value worth hiding: not empty, not already hidden, not a variable reference;
    under a name ending in TOKEN, not a number or a flag (a count, a switch)."""
    text = text.strip()
    if name.lower().endswith("token") and re.fullmatch(r"-?\d+|true|false|True|False", text):
        return False
    return bool(text) and REDACTED not in text and not re.fullmatch(
        r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\*+|<[^>]*>|None|null|none|\[\]", text)


def _hide_value(value: str) -> str:
    """The value with its secret part replaced: inside the quotes of each quoted string
    (a list's items too), else the whole bare word."""
    if QUOTED.search(value):
        return QUOTED.sub(lambda m: m.group(0)[0] + REDACTED + m.group(0)[-1]
                          if _is_value(m.group(1) or m.group(2) or "") else m.group(0), value)
    return REDACTED


def _occurrences(text: str, word: str) -> Iterable[int]:
    pos = text.find(word)
    while pos >= 0:
        yield pos
        pos = text.find(word, pos + len(word))


def _named(text: str, start: int, end: int) -> Span | None:
    """The value assigned to the name at text[start:end], when the name is a secret's."""
    raw = text[start:end]
    option = raw.startswith("--")
    name = raw.lstrip("-")
    if not secret_name(name.replace("-", "_")) or (option and name != name.lower()):
        return None
    tail = (OPTION_VALUE if option else ASSIGNED).match(text, end)
    if tail is None or not _is_value(tail.group("value").strip("'\"[]"), name):
        return None
    value = tail.group("value")
    hidden = REDACTED if option else _hide_value(value)
    why = f"--{name} is a secret's option" if option else f"{name} is a secret's name"
    return (tail.start("value"), tail.end("value"), REDACTED if hidden == value else hidden,
            "name", why)


def _names(text: str) -> list[Span]:
    low, seen, found = text.lower(), set(), []
    for word in NAME_WORDS:
        for pos in _occurrences(low, word):
            start, end = pos, pos + len(word)
            while start > 0 and text[start - 1] in NAME_CHARS:
                start -= 1
            while end < len(text) and text[end] in NAME_CHARS:
                end += 1
            if start not in seen:
                seen.add(start)
                span = _named(text, start, end)
                if span is not None:
                    found.append(span)
    return found


def _shapes(text: str) -> list[Span]:
    found: list[Span] = []
    for pos in _occurrences(text, "://"):
        m = USERINFO.match(text, pos + 3)
        if m and m.group("password") != REDACTED:
            found.append((m.start("password"), m.end("password"), REDACTED, "url-userinfo",
                          "a password in a URL (user:password@)"))
    for prefix, (why, pattern) in TOKENS.items():
        for pos in _occurrences(text, prefix):
            if pos and (text[pos - 1] in WORD_CHARS or text[pos - 1] == "-"):
                continue
            m = pattern.match(text, pos)
            if m:
                found.append((pos, m.end(), REDACTED, "token", why))
    return found


def _spans(text: str) -> list[Span]:
    """Every secret in `text` but a private key, in order, none overlapping."""
    kept: list[Span] = []
    for span in sorted([*_names(text), *_shapes(text)], key=lambda s: (s[0], -s[1])):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def _redact(text: str, file: str, first_line: int) -> tuple[str, list[Redaction]]:
    """`text` with its secrets replaced, again until none is left (a value hidden in part
    can leave a name and a value side by side)."""
    found: list[Redaction] = []
    for _ in range(8):
        text, more = _once(text, file, first_line)
        if not more:
            return text, found
        found += more
    return text, found


def _once(text: str, file: str, first_line: int) -> tuple[str, list[Redaction]]:
    spans = _spans(text)
    if not spans:
        return text, []
    out, found, at, line, counted = [], [], 0, first_line, 0
    for start, end, replacement, kind, why in spans:
        line += text.count("\n", counted, start)
        counted = start
        found.append(Redaction(file=file, line=line, kind=kind, why=why))
        out += [text[at:start], replacement]
        at = end
    out.append(text[at:])
    return "".join(out), found


def redact_line(line: str, file: str, number: int) -> tuple[str, list[Redaction]]:
    """One line (or several, numbered from `number`) with every secret but a private key
    replaced, and what was replaced."""
    return _redact(line, file, number)


def private_keys(lines: Iterable[str], file: str) -> list[Redaction]:
    """Where a PEM private key begins in `lines`."""
    return [Redaction(file=file, line=n, kind="private-key", why="a PEM private key")
            for n, line in enumerate(lines, 1) if "PRIVATE" in line and PEM_KEY.search(line)]


def redact_text(text: str, file: str) -> tuple[str, list[Redaction]]:
    """`text` with every secret replaced; a private key is refused (`refuse_keys`)."""
    refuse_keys(private_keys(text.splitlines(), file) if "PRIVATE" in text else [])
    return _redact(text, file, 1)


def redact_bytes(data: bytes, file: str) -> tuple[bytes, list[Redaction]]:
    """Bytes read as text byte for byte (surrogate escapes keep what is not UTF-8)."""
    text, found = redact_text(data.decode("utf-8", "surrogateescape"), file)
    return (text.encode("utf-8", "surrogateescape") if found else data), found


def findings(text: str, file: str) -> list[Redaction]:
    """Every secret in `text`, private keys first."""
    keys = private_keys(text.splitlines(), file) if "PRIVATE" in text else []
    return [*keys, *_redact(text, file, 1)[1]]


def refuse_keys(found: Sequence[Redaction]) -> None:
    keys = [f for f in found if f.kind == "private-key"]
    if keys:
        raise Refused(f"{keys[0].file}:{keys[0].line}: holds a private key; it is never "
                      "copied, hashed into a record or stored",
                      hint="remove the key from the file (a signing key stays in the keys "
                           "folder), then run the command again")


def refuse_any(found: Sequence[Redaction], what: str) -> None:
    """Refuse an input that must hold no secret at all, naming the first one."""
    refuse_keys(found)
    if found:
        f = found[0]
        raise Refused(f"{f.file}:{f.line}: {what} holds a secret ({f.why})",
                      hint="take the value out; give a secret to the engine through the "
                           "environment it starts in, never through a file that is sealed")


BLOCK = 1 << 20


def scan_file(path: Path, name: str) -> list[Redaction]:
    """Every secret in a file, read in blocks of whole lines (bounded memory; a line
    longer than a block is scanned in block-sized parts). A private key is refused."""
    found: list[Redaction] = []
    number, rest = 1, b""
    with open(path, "rb") as f:
        while block := f.read(BLOCK):
            head, newline, rest = (rest + block).rpartition(b"\n")
            if len(rest) > BLOCK:  # no newline for a block: scan what is there
                head, newline, rest = head + newline + rest, b"", b""
            number = _block(head + newline, name, number, found)
    if rest:
        _block(rest, name, number, found)
    return found


def _block(data: bytes, name: str, number: int, found: list[Redaction]) -> int:
    """Scan whole lines starting at line `number`; the number of the next line."""
    text = data.decode("utf-8", "surrogateescape")
    if "PRIVATE" in text:
        refuse_keys([Redaction(file=name, line=number + i, kind="private-key",
                               why="a PEM private key")
                     for i, line in enumerate(text.split("\n")) if PEM_KEY.search(line)])
    found += _redact(text, name, number)[1]
    return number + text.count("\n")


def redact_json(value: Any, where: str) -> tuple[Any, list[Redaction]]:
    """A JSON value with every secret replaced: the value under a secret's name, and
    URL passwords and token shapes in any string; `where` names each by its path."""
    found: list[Redaction] = []

    def walk(v: Any, at: str) -> Any:
        if isinstance(v, dict):
            return {k: hide(k, x, f"{at}.{k}") for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, f"{at}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, str):
            text, seen = redact_line(v, at, 0)
            found.extend(seen)
            return text
        return v

    def hide(key: str, v: Any, at: str) -> Any:
        if secret_name(key) and isinstance(v, str) and _is_value(v, key):
            found.append(Redaction(file=at, line=0, kind="name", why=f"{key} is a secret's name"))
            return REDACTED
        return walk(v, at)

    return walk(value, where), found
