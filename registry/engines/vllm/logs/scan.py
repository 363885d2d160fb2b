"""Streaming vLLM server-log parser: one pass over the bytes, constant memory.

The log is read in cache-sized chunks of whole lines. Each chunk is searched by a few
compiled patterns with literal prefixes, which run at C speed; only the lines they
hit are decoded (UTF-8, invalid bytes replaced) and parsed in Python. While the
engine starts up, one alternation over every identity message runs as well; once
the server is ready the identity is fixed, and only runtime messages are searched:
KV usage, speculative decoding (kept apart by phase: split at `/metrics` scrapes and
engine restarts), `[[expect]]` markers, errors, engine restarts.

Never matches on `file.py:LINE`; tolerant of process prefixes (`Worker_TP1_EP1`,
`VllmWorker rank=2`, `EngineCore_DP0`, colour-coded), V0, V1 and condensed logger
headers, a notebook's line prefix, prefix-less lines, tqdm bars fused with `\\r`,
tracebacks, invalid UTF-8 and a last line cut off mid-way.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
from collections import defaultdict, deque
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import BinaryIO

from registry.base.hashing import cpu_count
from registry.engines.vllm.logs import messages as msg
from registry.engines.vllm.logs.lines import MAX_TEXT, Lines, LineSpan
from registry.engines.vllm.logs.markers import Marker
from registry.engines.vllm.logs.tracebacks import Tracebacks
from registry.errors import InvalidInput
from registry.logs.facts import Fact, LogScan, SpecLogTotals, SpecPhase

CHUNK = 1 << 20  # small enough that the passes over one chunk stay in the CPU cache
MAX_LINE = 64 << 20  # a longer "line" (binary garbage) is cut, never held whole
PER_KIND = 256  # startup facts kept per kind (ranks, env vars): memory stays constant
MAX_ERRORS = 20
SPLIT_MIN = 64 << 20  # a rest of the log smaller than this is scanned in one process
FOLLOW = 8 << 20  # bytes searched past a part's end for the end of a traceback open there

STARTUP = msg.startup_scanner()
EMBEDDED = msg.embedded_scanners()
ENGINE_START = msg.ENGINE_START.encode()
KV_USAGE = re.compile(msg.KV_USAGE.encode())
SPEC_COUNTS = re.compile(msg.SPEC_COUNTS.encode())
SPEC_NEEDLE = b"SpecDecoding metrics: "
METRICS_SCRAPE = msg.METRICS_SCRAPE.encode()
MAX_PHASES = 64  # spec-decoding phases kept; past that (periodic scraping) the last holds the rest
ERROR_HEADER = re.compile(msg.ERROR_HEADER.encode())


def scan_log(path: Path, markers: Mapping[str, str] | None = None, *,
             workers: int | None = None) -> LogScan:
    """Parse a vLLM server log. `markers`: name -> regex counted per process (rank).

    Once the server is ready only aggregates are left to find; when that rest is large
    (a long-running server), it is split at line starts and scanned on `workers`
    processes (default: every usable core), then merged as one pass would have seen it.
    """
    scanner = _Scanner(str(path), markers or {})
    try:
        with open(path, "rb") as stream:
            workers = workers or cpu_count()
            rest = _feed(scanner, stream, split=workers > 1)
            if rest is not None:
                _scan_split(scanner, stream, rest, workers)
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read the log: {e.strerror}") from None
    return scanner.result()


def _feed(scanner: _Scanner, stream: BinaryIO, end: int | None = None,
          split: bool = False) -> int | None:
    """Scan the stream's lines up to byte `end` (else to its end, the unfinished last line
    included). With `split`, stop at the first line start after the server is ready,
    when at least SPLIT_MIN bytes are left, and return its offset.

    Each block is scanned up to its last newline (as `bytes`: `re` runs twice as fast
    on bytes as on a bytearray); the unfinished line joins the next block's first line."""
    parts: list[bytes] = []  # the unfinished line, joined once (no quadratic copying)
    held = 0
    size = os.fstat(stream.fileno()).st_size if split else 0
    while block := stream.read(CHUNK if end is None else min(CHUNK, end - stream.tell())):
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
        if split and not scanner.startup and size - stream.tell() + held >= SPLIT_MIN:
            return stream.tell() - held
    tail = b"".join(parts)
    if tail:
        scanner.chunk(tail, 0, len(tail))
    scanner.cut_off = bool(tail)
    return None


def _scan_split(scanner: _Scanner, stream: BinaryIO, start: int, workers: int) -> None:
    """Scan the log from `start` in `workers` parts at once and merge them in order."""
    size = os.fstat(stream.fileno()).st_size
    bounds = sorted({start, *(_line_start(stream, start + i * (size - start) // workers)
                              for i in range(1, workers))} - {size})
    ranges = list(zip(bounds, [*bounds[1:], None], strict=True))
    context = multiprocessing.get_context("fork")  # the children need only this module
    # the workers leave Ctrl-C to the parent, which reports it once (no child traceback)
    with ProcessPoolExecutor(max(len(ranges) - 1, 1), mp_context=context,
                             initializer=signal.signal,
                             initargs=(signal.SIGINT, signal.SIG_IGN)) as pool:
        later = [pool.submit(_scan_part, scanner.source, scanner.patterns, *r) for r in ranges[1:]]
        stream.seek(start)
        scanner.follow_tracebacks(stream)
        parts = [_scan_part(scanner.source, scanner.patterns, *ranges[0]),
                 *(future.result() for future in later)]
    for part in parts:
        scanner.absorb(part)


def _line_start(stream: BinaryIO, pos: int) -> int:
    """The first line start at or after `pos`."""
    stream.seek(pos - 1 if pos else 0)
    while block := stream.read(CHUNK):
        newline = block.find(b"\n")
        if newline >= 0:
            return stream.tell() - len(block) + newline + 1
    return stream.tell()


def _scan_part(path: str, markers: Mapping[str, str], start: int, end: int | None) -> _Scanner:
    """A part after startup, numbered from line 1; tracebacks open at its end are
    followed into the bytes after it."""
    scanner = _Scanner(path, markers)
    scanner.startup = False
    with open(path, "rb") as stream:
        stream.seek(start)
        _feed(scanner, stream, end)
        scanner.follow_tracebacks(stream)
    scanner.lines.buf = b""  # sent back to the parent: keep it small
    return scanner


class _Scanner:
    def __init__(self, source: str, markers: Mapping[str, str]) -> None:
        self.source = source
        self.patterns = dict(markers)
        self.startup = True
        self.cut_off = False
        self.lines = Lines()
        self.facts: list[Fact] = []  # in log order once sorted
        self.per_kind: dict[str, int] = defaultdict(int)
        self.seen_embedded: set[tuple[str, int | None]] = set()
        self.labels: dict[int, str] = {}  # pid -> rank-named process label
        self.restarts = 0
        self.peak: Fact | None = None
        self.spec = [0, 0, 0]  # lines, accepted, drafted
        self.spec_first: Fact | None = None
        self.phases = [_Phase(None)]
        self.ready_end = 0  # in the chunk where the server became ready: where that line ends
        self.markers = [Marker(name, pattern, self.lines) for name, pattern in markers.items()]
        self.errors: list[Fact] = []
        self.error_texts: set[str] = set()
        self.error_lines = 0
        self.tracebacks = Tracebacks(self.lines)
        self.exceptions: deque[Fact] = deque(maxlen=5)

    # -- one chunk of whole lines: buf[start:end] -------------------------------------

    def chunk(self, buf: bytes, start: int, end: int) -> None:
        self.lines.begin(buf, start)
        runtime = start
        if self.startup:
            self._startup(buf, start, end)
            runtime = end if self.startup else self.ready_end
        else:
            self._restarts(buf, start, end)
        self._kv_usage(buf, start, end)
        self._spec(buf, start, end, runtime)
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
            kind = msg.Kind(m.lastgroup or "")
            at = m.start(kind.value)
            span = self.lines.span(buf, at, start, end, message=at)
            fact = self._detail(kind, span)
            if fact is None:
                continue
            self._keep(fact)
            if fact.kind == msg.Kind.ready:
                self.startup = False  # identity is fixed from here on
                self.ready_end = span.end
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
        if kind == msg.Kind.engine_config:
            text = _unwrapped(self.lines.buf, span, text)
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

    def _spec(self, buf: bytes, start: int, end: int, runtime: int) -> None:
        """Count the interval lines, opening a new phase at each boundary after `runtime`."""
        pos = start
        for at, kind in self._boundaries(buf, runtime, end):
            self._spec_counts(buf, pos, at, start, end)
            if len(self.phases) < MAX_PHASES:
                self.phases.append(_Phase(self.fact(kind, self.lines.span(buf, at, start, end))))
            pos = at
        self._spec_counts(buf, pos, end, start, end)

    @staticmethod
    def _boundaries(buf: bytes, start: int, end: int) -> list[tuple[int, str]]:
        found = []
        for needle, kind in ((METRICS_SCRAPE, "metrics_scrape"), (ENGINE_START, "restart")):
            at = buf.find(needle, start, end)
            while at >= 0:
                found.append((at, kind))
                at = buf.find(needle, at + 1, end)
        return sorted(found)

    def _spec_counts(self, buf: bytes, pos: int, stop: int, start: int, end: int) -> None:
        # The totals are all that is kept: one C-level findall of the two counts.
        found = SPEC_COUNTS.findall(buf, pos, stop)
        if not found:
            return
        counts = (len(found), sum(int(accepted) for accepted, _ in found),
                  sum(int(drafted) for _, drafted in found))
        self.spec = [a + b for a, b in zip(self.spec, counts, strict=True)]
        self.phases[-1].add(*counts)
        if self.spec_first is None:
            at = buf.find(SPEC_NEEDLE, pos, stop)
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
            if self._new_error(text):
                self._add_error(self.fact("error", span, text=text))

    def _new_error(self, text: str) -> bool:
        return len(self.errors) < MAX_ERRORS and text not in self.error_texts

    def _add_error(self, fact: Fact) -> None:
        self.error_texts.add(fact.text)
        self.errors.append(fact)

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

    # -- a split scan ----------------------------------------------------------------

    def follow_tracebacks(self, stream: BinaryIO) -> None:
        """Find the final lines of tracebacks still open at the end of this part in the
        bytes after it, which are not counted as this part's."""
        first, newlines, size = self.lines.first, self.lines.newlines, self.lines.size
        stop = stream.tell() + FOLLOW
        while self.tracebacks.pending and stream.tell() < stop and (block := stream.read(CHUNK)):
            end = block.rfind(b"\n") + 1 or len(block)
            stream.seek(end - len(block), os.SEEK_CUR)
            self.lines.begin(block, 0)
            for span in self.tracebacks.scan(block, 0, end, follow_only=True):
                self.exceptions.append(self.fact("exception", span))
            self.lines.end(block, 0, end)
        self.tracebacks.pending.clear()
        self.lines.first, self.lines.newlines, self.lines.size = first, newlines, size

    def absorb(self, part: _Scanner) -> None:
        """Take in the scan of the part of the log that follows (numbered from line 1)."""
        shift = self.lines.first - 1

        def moved(fact: Fact) -> Fact:
            return fact.model_copy(update={"line": fact.line + shift})

        if not self.restarts:
            for fact in part.facts:  # a part's facts are its first restart, if any
                self._keep(moved(fact))
        self.restarts += part.restarts
        self.labels.update(part.labels)  # a part names processes by their rank only
        if part.peak and (self.peak is None or
                          float(part.peak.values["pct"]) > float(self.peak.values["pct"])):
            self.peak = moved(part.peak)
        self.spec = [mine + theirs for mine, theirs in zip(self.spec, part.spec, strict=True)]
        first, *rest = part.phases
        self.phases[-1].add(first.lines, first.accepted, first.drafted)
        for phase in rest:
            if len(self.phases) < MAX_PHASES:
                self.phases.append(_Phase(moved(phase.opened_by) if phase.opened_by else None))
            self.phases[-1].add(phase.lines, phase.accepted, phase.drafted)
        if self.spec_first is None and part.spec_first is not None:
            self.spec_first = moved(part.spec_first)
        for marker, theirs in zip(self.markers, part.markers, strict=True):
            marker.absorb(theirs, moved)
        for fact in part.errors:
            if self._new_error(fact.text):
                self._add_error(moved(fact))
        self.error_lines += part.error_lines
        self.exceptions.extend(moved(fact) for fact in part.exceptions)
        self.lines.first += part.lines.newlines
        self.lines.newlines = self.lines.first - 1
        self.lines.size += part.lines.size
        self.cut_off = part.cut_off

    def result(self) -> LogScan:
        lines = self.lines.newlines + (1 if self.cut_off else 0)
        spec = None
        if self.spec_first is not None:
            spec = SpecLogTotals(lines=self.spec[0], accepted=self.spec[1], drafted=self.spec[2],
                                 first=self.spec_first)
        return LogScan(
            source=self.source, bytes=self.lines.size, lines=lines, cut_off=self.cut_off,
            facts=sorted(self.facts, key=lambda fact: fact.line),
            engine_restarts=self.restarts, kv_usage_peak=self.peak, spec=spec,
            spec_phases=[phase.result() for phase in self.phases] if spec else [],
            markers=[m.result(self.labels) for m in self.markers], errors=self.errors,
            error_lines=self.error_lines,
            exceptions=sorted(self.exceptions, key=lambda fact: fact.line),
        )


class _Phase:
    """Speculative-decoding counts since a boundary (see `SpecPhase`)."""

    __slots__ = ("accepted", "drafted", "lines", "opened_by")

    def __init__(self, opened_by: Fact | None) -> None:
        self.opened_by = opened_by
        self.lines = self.accepted = self.drafted = 0

    def add(self, lines: int, accepted: int, drafted: int) -> None:
        self.lines += lines
        self.accepted += accepted
        self.drafted += drafted

    def result(self) -> SpecPhase:
        return SpecPhase(opened_by=self.opened_by, lines=self.lines, accepted=self.accepted,
                         drafted=self.drafted)


WRAP_WINDOW = 1 << 16  # bytes either side of a line looked at for the terminal's width


def _unwrapped(buf: bytes, span: LineSpan, text: str) -> str:
    """A terminal copy hard-wrapped at a fixed width W (`...tensor_parallel_si` / `ze=2`):
    the line is W bytes long, no line near it is longer (W is the terminal's width), and
    its rest follows on lines without a log prefix, each W long but the last. Rejoined;
    any other line is left as it is."""
    width = span.end - span.start
    near = buf[max(0, span.start - WRAP_WINDOW):span.end + WRAP_WINDOW].split(b"\n")
    if width < 40 or max(map(len, near)) > width:
        return text
    pos, pieces = span.end + 1, list[bytes]()
    while len(pieces) < 64:
        stop = buf.find(b"\n", pos)
        line = buf[pos:len(buf) if stop < 0 else stop]
        prefix = msg.PREFIX.match(line)
        if not line.strip() or (prefix is not None and prefix.end()) or len(line) > width:
            break
        pieces.append(line)
        if len(line) < width or stop < 0:
            break
        pos = stop + 1
    if not pieces:
        return text
    return (text + b"".join(pieces).decode("utf-8", "replace").rstrip())[:MAX_TEXT]
