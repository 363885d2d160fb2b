"""Streaming vLLM server-log parser: one pass over the bytes, constant memory.

The log is read in cache-sized chunks of whole lines. Each chunk is searched by a few
compiled patterns with literal prefixes, which run at C speed; only the lines they
hit are decoded (UTF-8, invalid bytes replaced) and parsed in Python. While the
engine starts up, one alternation over every identity message runs as well; once
the server is ready the identity is fixed, and only runtime messages are searched:
KV usage, speculative decoding, `[[expect]]` markers, errors, engine restarts.

Never matches on `file.py:LINE`; tolerant of process prefixes (`Worker_TP1_EP1`,
`VllmWorker rank=2`, `EngineCore_DP0`), prefix-less lines, tqdm bars fused with `\\r`,
tracebacks, invalid UTF-8 and a last line cut off mid-way.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from registry.errors import InvalidInput
from registry.logs import messages as msg
from registry.logs.facts import Fact, LogScan, SpecLogTotals
from registry.logs.lines import Lines, LineSpan
from registry.logs.markers import Marker
from registry.logs.tracebacks import Tracebacks

CHUNK = 1 << 20  # small enough that the passes over one chunk stay in the CPU cache
MAX_LINE = 64 << 20  # a longer "line" (binary garbage) is cut, never held whole
PER_KIND = 256  # startup facts kept per kind (ranks, env vars): memory stays constant
MAX_ERRORS = 20

STARTUP = msg.startup_scanner()
EMBEDDED = msg.embedded_scanners()
ENGINE_START = msg.ENGINE_START.encode()
KV_USAGE = re.compile(msg.KV_USAGE.encode())
SPEC_COUNTS = re.compile(msg.SPEC_COUNTS.encode())
SPEC_NEEDLE = b"SpecDecoding metrics: "
ERROR_HEADER = re.compile(msg.ERROR_HEADER.encode())


def scan_log(path: Path, markers: Mapping[str, str] | None = None) -> LogScan:
    """Parse a vLLM server log. `markers`: name -> regex counted per process (rank)."""
    try:
        with open(path, "rb") as stream:
            return scan_stream(stream, str(path), markers or {})
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read the log: {e.strerror}") from None


def scan_stream(stream: BinaryIO, source: str, markers: Mapping[str, str]) -> LogScan:
    """Each block is scanned up to its last newline (as `bytes`: `re` runs twice as fast
    on bytes as on a bytearray); the unfinished line joins the next block's first line."""
    scanner = _Scanner(source, markers)
    parts: list[bytes] = []  # the unfinished line, joined once (no quadratic copying)
    held = 0
    while block := stream.read(CHUNK):
        first = block.find(b"\n")
        if first < 0 and held + len(block) < MAX_LINE:
            parts.append(block)  # a very long line: read on until it ends
            held += len(block)
            continue
        head = first + 1 if first >= 0 else len(block)
        line = b"".join([*parts, block[:head]])
        scanner.chunk(line, 0, len(line))
        cut = max(block.rfind(b"\n") + 1, head)
        if cut > head:
            scanner.chunk(block, head, cut)
        parts, held = ([block[cut:]], len(block) - cut) if cut < len(block) else ([], 0)
    tail = b"".join(parts)
    if tail:
        scanner.chunk(tail, 0, len(tail))
    return scanner.result(cut_off=bool(tail))


class _Scanner:
    def __init__(self, source: str, markers: Mapping[str, str]) -> None:
        self.source = source
        self.startup = True
        self.lines = Lines()
        self.facts: list[Fact] = []  # in log order once sorted
        self.per_kind: dict[str, int] = defaultdict(int)
        self.seen_embedded: set[tuple[str, int | None]] = set()
        self.labels: dict[int, str] = {}  # pid -> rank-named process label
        self.restarts = 0
        self.peak: Fact | None = None
        self.spec = [0, 0, 0]  # lines, accepted, drafted
        self.spec_first: Fact | None = None
        self.markers = [Marker(name, pattern, self.lines) for name, pattern in markers.items()]
        self.errors: list[Fact] = []
        self.error_texts: set[str] = set()
        self.error_lines = 0
        self.tracebacks = Tracebacks(self.lines)
        self.exceptions: deque[Fact] = deque(maxlen=5)

    # -- one chunk of whole lines: buf[start:end] -------------------------------------

    def chunk(self, buf: bytes, start: int, end: int) -> None:
        self.lines.begin(buf, start)
        if self.startup:
            self._startup(buf, start, end)
        else:
            self._restarts(buf, start, end)
        self._kv_usage(buf, start, end)
        self._spec(buf, start, end)
        for marker in self.markers:
            for key, span in marker.scan(buf, start, end):
                marker.first[key] = self.fact("marker", span)
        self._errors(buf, start, end)
        for span in self.tracebacks.scan(buf, start, end):
            self.exceptions.append(self.fact("exception", span))
        self.lines.end(buf, start, end)

    def _startup(self, buf: bytes, start: int, end: int) -> None:
        for kind, pattern in EMBEDDED.items():
            for m in pattern.finditer(buf, start, end):
                self._embedded(kind, buf, m, start, end)
        for m in STARTUP.finditer(buf, start, end):
            span = self.lines.span(buf, m.start() + 2, start, end)
            fact = self._detail(msg.Kind(m.lastgroup or ""), span)
            if fact is None:
                continue
            self._keep(fact)
            if fact.kind == msg.Kind.ready:
                self.startup = False  # identity is fixed from here on
                self._restarts(buf, span.end, end)
                return

    def _embedded(self, kind: msg.Kind, buf: bytes, m: re.Match[bytes], start: int,
                  end: int) -> None:
        span = self.lines.span(buf, m.start(), start, end)
        if (kind, span.pid) in self.seen_embedded:
            return  # a tqdm bar repeats its text with every update
        self.seen_embedded.add((kind, span.pid))
        text = buf[m.start():span.end].decode("utf-8", "replace").split("\r")[0]
        found = msg.DETAIL[kind].search(text)
        if found:
            self._keep(self.fact(kind, span, values=found.groupdict(), text=text))

    def _detail(self, kind: msg.Kind, span: LineSpan) -> Fact | None:
        text = span.text(self.lines.buf)
        found = msg.DETAIL[kind].match(text)
        if found is None:
            return None
        return self.fact(kind, span, values=found.groupdict(), text=text)

    def _keep(self, fact: Fact) -> None:
        if self.per_kind[fact.kind] < PER_KIND:
            self.per_kind[fact.kind] += 1
            self.facts.append(fact)

    def _restarts(self, buf: bytes, start: int, end: int) -> None:
        at = buf.find(ENGINE_START, start, end)  # a long literal: bytes.find skips fast
        while at >= 0:
            self.restarts += 1
            if self.restarts == 1:
                self._keep(self.fact("restart", self.lines.span(buf, at, start, end)))
            at = buf.find(ENGINE_START, at + 1, end)

    def _kv_usage(self, buf: bytes, start: int, end: int) -> None:
        values = KV_USAGE.findall(buf, start, end)
        if not values:
            return
        top = max(values, key=float)
        if self.peak is None or float(top) > float(self.peak.values["pct"]):
            at = buf.find(b"KV cache usage: " + top + b"%", start, end)
            span = self.lines.span(buf, at, start, end)
            self.peak = self.fact("kv_usage", span, values={"pct": top.decode()})

    def _spec(self, buf: bytes, start: int, end: int) -> None:
        # The totals are all that is kept: one C-level findall of the two counts.
        found = SPEC_COUNTS.findall(buf, start, end)
        if not found:
            return
        self.spec[0] += len(found)
        self.spec[1] += sum(int(accepted) for accepted, _ in found)
        self.spec[2] += sum(int(drafted) for _, drafted in found)
        if self.spec_first is None:
            at = buf.find(SPEC_NEEDLE, start, end)
            self.spec_first = self.fact("spec_decoding", self.lines.span(buf, at, start, end))

    def _errors(self, buf: bytes, start: int, end: int) -> None:
        for m in ERROR_HEADER.finditer(buf, start, end):
            span = self.lines.span(buf, m.start(), start, end)
            text = span.text(buf)
            if span.level != "ERROR":
                if not text.startswith("ERROR:    "):
                    continue  # the words appear inside another message
                text = text.removeprefix("ERROR:").strip()  # uvicorn's own log line
            if not text or text[0].isspace() or text.startswith(msg.TRACEBACK):
                continue  # a traceback's body: its final line is found below
            self.error_lines += 1
            if len(self.errors) < MAX_ERRORS and text not in self.error_texts:
                self.error_texts.add(text)
                self.errors.append(self.fact("error", span, text=text))

    # -- facts -----------------------------------------------------------------------

    def fact(self, kind: str, span: LineSpan, values: dict[str, str | None] | None = None,
             text: str | None = None) -> Fact:
        self._label(kind, span, values or {})
        return Fact(kind=kind, line=self.lines.number(self.lines.buf, span.start),
                    text=text if text is not None else span.text(self.lines.buf),
                    proc=span.proc, pid=span.pid,
                    values={k: v for k, v in (values or {}).items() if v is not None})

    def _label(self, kind: str, span: LineSpan, values: dict[str, str | None]) -> None:
        """Name each process by its rank: `Worker_TP1_EP1` once the worker renames itself,
        else `rank N` from its `world_size=W rank=N` line."""
        pid, proc = span.pid, span.proc or ""
        if pid is None:
            return
        if "Worker_" in proc or "rank=" in proc:
            self.labels[pid] = proc
        elif kind == msg.Kind.worker_rank and values.get("rank"):
            self.labels.setdefault(pid, f"rank {values['rank']}")

    def result(self, cut_off: bool) -> LogScan:
        lines = self.lines.newlines + (1 if cut_off else 0)
        spec = None
        if self.spec_first is not None:
            spec = SpecLogTotals(lines=self.spec[0], accepted=self.spec[1], drafted=self.spec[2],
                                 first=self.spec_first)
        return LogScan(
            source=self.source, bytes=self.lines.size, lines=lines, cut_off=cut_off,
            facts=sorted(self.facts, key=lambda fact: fact.line),
            engine_restarts=self.restarts, kv_usage_peak=self.peak, spec=spec,
            markers=[m.result(self.labels) for m in self.markers], errors=self.errors,
            error_lines=self.error_lines, exceptions=list(self.exceptions),
        )
