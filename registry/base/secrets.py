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
_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
SECRET_NAME = re.compile(
    r"(?i)^(?:aws_.*|.*(?:secret|password|passwd).*|.*(?:api_?key|access_key|private_key)"
    r"|.*[_.-]token)$")
# names ending in TOKEN that count tokens or name a tokenizer's own (`bos_token`)
TOKENIZER_NAMES = re.compile(
    r"(?i)^(?:max_.*|.*(?:bos|eos|pad|unk|sep|cls|mask|special|adapter|bonus)_token)$")
# NAME then `=` or `:`, then a quoted value, a list of them, or a bare word
ASSIGNMENT = re.compile(
    r"""(?P<q>['"]?)(?P<name>""" + _NAME + r""")(?P=q)\s*(?:=|:)\s*"""
    r"""(?P<value>\[[^\]\n]*\]|'[^'\n]*'|"[^"\n]*"|[^\s,;}\])'"]+)""")
# an option on a command line, `--api-key X`, `--api-key=X`, or in argv JSON `"--api-key", "X"`
OPTION = re.compile(r"""--(?P<name>[a-z0-9][a-z0-9_-]*)(?:=|['"]\s*,\s*['"]|[ \t]+)"""
                    r"""(?P<value>[^\s'",\]]+)""")
QUOTED = re.compile(r"""'([^'\n]*)'|"([^"\n]*)\"""")
USERINFO = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@'\"]+:(?P<password>[^/\s@'\"]+)@")
TOKENS = {
    "a Hugging Face token (hf_...)": re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
    "an API key (sk-...)": re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"),
    "a GitHub token (gh?_...)": re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    "a Slack token (xox?-...)": re.compile(r"(?<![A-Za-z0-9_])xox[abposr]-[A-Za-z0-9-]{10,}"),
    "an AWS access key id (AKIA...)": re.compile(r"(?<![A-Za-z0-9])AKIA[0-9A-Z]{16}(?![0-9A-Z])"),
}
# cheap test a line passes before any pattern runs: most log lines hold none of these
_HINT = re.compile(r"(?i)token|secret|passw|key|aws_|://|hf_|sk-|gh[pousr]_|github_pat|xox|AKIA"
                   r"|PRIVATE")


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


def redact_line(line: str, file: str, number: int) -> tuple[str, list[Redaction]]:
    """One line with every secret but a private key replaced, and what was replaced."""
    if not _HINT.search(line):
        return line, []
    found: list[Redaction] = []

    def assignment(m: re.Match[str]) -> str:
        name, value = m.group("name"), m.group("value")
        if not secret_name(name) or not _is_value(value.strip("'\"[]"), name):
            return m.group(0)
        found.append(Redaction(file=file, line=number, kind="name",
                               why=f"{name} is a secret's name"))
        return m.group(0)[:m.start("value") - m.start()] + _hide_value(value)

    def userinfo(m: re.Match[str]) -> str:
        found.append(Redaction(file=file, line=number, kind="url-userinfo",
                               why="a password in a URL (user:password@)"))
        return m.group(0).replace(":" + m.group("password") + "@", ":" + REDACTED + "@")

    def option(m: re.Match[str]) -> str:
        name = m.group("name").replace("-", "_")
        if not secret_name(name) or not _is_value(m.group("value"), name):
            return m.group(0)
        found.append(Redaction(file=file, line=number, kind="name",
                               why=f"--{m.group('name')} is a secret's option"))
        return m.group(0)[:m.start("value") - m.start()] + REDACTED

    line = ASSIGNMENT.sub(assignment, line)
    line = OPTION.sub(option, line)
    line = USERINFO.sub(userinfo, line)
    for why, pattern in TOKENS.items():
        if pattern.search(line):
            found.append(Redaction(file=file, line=number, kind="token", why=why))
            line = pattern.sub(REDACTED, line)
    return line, found


def private_keys(lines: Iterable[str], file: str) -> list[Redaction]:
    """Where a PEM private key begins in `lines`."""
    return [Redaction(file=file, line=n, kind="private-key", why="a PEM private key")
            for n, line in enumerate(lines, 1) if "PRIVATE" in line and PEM_KEY.search(line)]


def redact_text(text: str, file: str) -> tuple[str, list[Redaction]]:
    """`text` with every secret replaced; a private key is refused (`refuse_keys`)."""
    lines = text.splitlines(keepends=True)
    refuse_keys(private_keys(lines, file))
    out, found = [], []
    for number, line in enumerate(lines, 1):
        kept, seen = redact_line(line, file, number)
        out.append(kept)
        found += seen
    return "".join(out), found


def redact_bytes(data: bytes, file: str) -> tuple[bytes, list[Redaction]]:
    """Bytes read as text byte for byte (surrogate escapes keep what is not UTF-8)."""
    text, found = redact_text(data.decode("utf-8", "surrogateescape"), file)
    return (text.encode("utf-8", "surrogateescape") if found else data), found


def findings(text: str, file: str) -> list[Redaction]:
    """Every secret in `text`, private keys first."""
    lines = text.splitlines()
    found = private_keys(lines, file)
    for number, line in enumerate(lines, 1):
        found += redact_line(line, file, number)[1]
    return found


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
    """Every secret in a file, read in blocks (bounded memory); a line longer than a
    block is scanned in block-sized parts. A private key is refused at once."""
    found: list[Redaction] = []
    number, rest = 1, b""
    with open(path, "rb") as f:
        while block := f.read(BLOCK):
            parts = (rest + block).split(b"\n")
            rest = parts.pop()
            for part in parts:
                found += _line_findings(part, name, number)
                number += 1
            if len(rest) > BLOCK:  # no newline for a block: scan what is there
                found += _line_findings(rest, name, number)
                rest = b""
    if rest:
        found += _line_findings(rest, name, number)
    return found


def _line_findings(line: bytes, name: str, number: int) -> list[Redaction]:
    text = line.decode("utf-8", "surrogateescape")
    if "PRIVATE" in text and PEM_KEY.search(text):
        refuse_keys([Redaction(file=name, line=number, kind="private-key",
                               why="a PEM private key")])
    return redact_line(text, name, number)[1]


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
