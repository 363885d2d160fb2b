"""Streaming llama-server log reader: one pass over the bytes, each recognised line kept
as a fact under the server start, model, context or cache it belongs to.

Attribution follows the order llama-server prints in: a start opens at its `loading
model` line (the build and device lines just before it are its own); a
`llama_model_loader` block opens a model (the first is the target, a later one a draft
or an MTP head); a context's settings, its `Flash Attention was auto` resolution and its
cache lines belong to the latest context (the first is the target's, whatever model was
loaded last: an MTP head loads before the target's context is made).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from registry.engines.llamacpp.logs.lines import Line, plain
from registry.engines.llamacpp.logs.messages import NORMAL_ERRORS, PATTERNS, PREAMBLE, SIGNATURES
from registry.engines.llamacpp.logs.shapes import (
    Cache,
    Context,
    LlamaScan,
    ModelBlock,
    ServerStart,
    Timings,
)
from registry.logs.facts import Fact

MODEL_KINDS = frozenset({"tensor_type", "file_type", "file_size", "offloaded", "model_buffer",
                         "meta_device"})
CONTEXT_KINDS = frozenset({"context_setting", "fa_resolved", "kv_init"})
START_KINDS = frozenset({"draft_load", "mtp_path", "n_slots", "slot_ctx", "gpu_layers_user",
                         "spec_impl", "spec_limits", "spec_none", "ready", "parallel_auto",
                         "build", "listed_device", "metal_gpu", "pipeline", "generate",
                         "ctx_size_set", "ppl_chunks", "ppl_final", "backend_init", "arg_env",
                         "spec_cache"})
TIMING_KINDS = frozenset({"cli_timing", "timing_task", "prompt_eval", "eval", "acceptance"})
MAX_PER_KIND = 64  # a start's repeated lines (slots, device lists) are bounded
MAX_ERRORS = 20
# a launcher's own settings, printed before llama-server starts (`cache_type_k=f16`)
SETTING = re.compile(r"^(?P<key>[a-z][a-z0-9_]*)=(?P<value>.*)$")


@dataclass
class _Context:
    facts: list[Fact] = field(default_factory=list)
    caches: list[Cache] = field(default_factory=list)
    buffers: list[Fact] = field(default_factory=list)  # buffer, V padding: before the size
    role: str | None = None  # what the last `creating ... KV cache` line announced

    def has(self, key: str) -> bool:
        return any(f.kind == "context_setting" and f.values["key"] == key for f in self.facts)

    def freeze(self) -> Context:
        return Context(facts=self.facts, caches=self.caches)


@dataclass
class _Start:
    stream: str
    facts: list[Fact] = field(default_factory=list)
    models: list[ModelBlock] = field(default_factory=list)
    model: list[Fact] | None = None  # the open model block's facts
    model_role: str = "target"
    upcoming: list[Fact] = field(default_factory=list)  # `using device` before a block
    contexts: list[_Context] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return any(f.kind == "ready" for f in self.facts)

    def add(self, fact: Fact) -> None:
        if sum(f.kind == fact.kind for f in self.facts) < MAX_PER_KIND:
            self.facts.append(fact)

    def close_model(self) -> None:
        if self.model is not None:
            self.models.append(ModelBlock(role=self.model_role, facts=self.model))
            self.model, self.model_role = None, "draft"

    def context(self) -> _Context:
        if not self.contexts:
            self.contexts.append(_Context())
        return self.contexts[-1]

    def freeze(self) -> ServerStart:
        self.close_model()
        return ServerStart(stream=self.stream, facts=self.facts, models=self.models,
                           contexts=[c.freeze() for c in self.contexts])


@dataclass
class _Stream:
    name: str
    starts: list[_Start] = field(default_factory=list)
    pending: list[Fact] = field(default_factory=list)  # preamble lines before a start
    task: str | None = None  # the task of a two-line `print_timing` header
    cli_line: int | None = None  # the line of the latest llama-cli timing-block line
    cli_prompt: Fact | None = None  # that block's prompt line, until its eval line completes it
    fresh: bool = False  # a build line after a run's model: the next fact is a new process
    done: dict[tuple[int, str], Fact] = field(default_factory=dict)  # (start, task) -> eval

    def current(self) -> _Start:
        if not self.starts or self.fresh:
            self.open()
        return self.starts[-1]

    def open(self) -> _Start:
        start = _Start(stream=self.name)
        for fact in self.pending:
            start.add(fact)
        self.pending, self.fresh = [], False
        self.starts.append(start)
        return start

    def new_process(self, fact: Fact) -> bool:
        """A `build:` line after the current run loaded a model begins another process
        (llama-cli, then llama-perplexity, in one CI log): it waits for that run."""
        if fact.kind != "build" or not self.starts or self.fresh:
            return False
        if not (self.starts[-1].models or self.starts[-1].model is not None):
            return False
        self.pending.append(fact)
        self.fresh = True
        return True


@dataclass
class _Reader:
    streams: dict[str, _Stream] = field(default_factory=dict)
    recognised: Fact | None = None
    errors: list[Fact] = field(default_factory=list)
    first: dict[str, Fact] = field(default_factory=dict)
    settings: list[Fact] = field(default_factory=list)

    def read(self, line: Line) -> None:
        stream = self.streams.setdefault(line.stream, _Stream(line.stream))
        setting = SETTING.match(line.text) if self.recognised is None else None
        if setting and len(self.settings) < MAX_PER_KIND:
            self.settings.append(Fact(kind="setting", line=line.number, text=line.text[:400],
                                      values=setting.groupdict()))
            return
        matched = False
        for kind, pattern in PATTERNS.items():
            found = pattern.search(line.text)
            if found is None or kind == "error":
                continue
            matched = True
            values = {k: v for k, v in found.groupdict().items() if v is not None}
            self.place(stream, Fact(kind=kind, line=line.number, text=line.text[:400],
                                    proc=line.stream or None, values=values))
            if kind in ("start", "model_meta", "kv_size", "kv_self", "context_setting"):
                break  # these lines carry nothing else
        if self.recognised is None and matched and SIGNATURES.search(line.text):
            self.recognised = Fact(kind="recognised", line=line.number, text=line.text[:400])
        if (line.level == "E" or PATTERNS["error"].search(line.text)) \
                and not NORMAL_ERRORS.search(line.text) and len(self.errors) < MAX_ERRORS:
            self.errors.append(Fact(kind="error", line=line.number, text=line.text[:400],
                                    proc=line.stream or None))

    def place(self, stream: _Stream, fact: Fact) -> None:
        kind = fact.kind
        if kind == "start":
            stream.open().add(fact)
            return
        if stream.new_process(fact):
            return
        if kind in PREAMBLE and (not stream.starts or stream.current().ready):
            stream.pending.append(fact)
            return
        if kind in TIMING_KINDS:
            self.timing(stream, fact)
            return
        start = stream.current()
        if kind == "using_device":
            start.upcoming.append(fact)
        elif kind == "model_meta":
            start.close_model()
            start.model = [*start.upcoming, fact]
            start.upcoming = []
        elif kind in MODEL_KINDS and start.model is not None:
            start.model.append(fact)
        elif kind == "context_begin" or (kind == "context_setting" and _opens_context(start, fact)):
            start.close_model()
            start.contexts.append(_Context(facts=[fact]))
        elif kind in CONTEXT_KINDS:
            start.close_model()
            start.context().facts.append(fact)
        elif kind in ("iswa", "kv_buffer", "v_pad", "kv_size", "kv_self"):
            start.close_model()
            _cache_line(start.context(), fact)
        elif kind in START_KINDS or kind in MODEL_KINDS:
            start.add(fact)

    def timing(self, stream: _Stream, fact: Fact) -> None:
        if fact.kind == "timing_task":  # the same line may go on with its figure
            stream.task = fact.values["task"]
            return
        if fact.kind == "cli_timing":
            stream.cli_line = fact.line
            return
        if stream.cli_line == fact.line:
            self.cli_timing(stream, fact)
            return
        if fact.kind == "eval":
            key = (len(stream.starts), stream.task or f"line {fact.line}")
            stream.done.setdefault(key, fact)
        self.first.setdefault(fact.kind, fact)

    def cli_timing(self, stream: _Stream, fact: Fact) -> None:
        """A llama-cli block is one generation: its prompt figure counts only with the eval
        line that completes it (a llama-perplexity block has a prompt line and no
        generation: `inf tokens per second`, no figure)."""
        if fact.kind == "prompt_eval":
            stream.cli_prompt = fact
            return
        if fact.kind != "eval":
            return
        stream.done.setdefault((len(stream.starts), f"line {fact.line}"), fact)
        if "eval" not in self.first:
            self.first["eval"] = fact
            if stream.cli_prompt is not None:
                self.first.setdefault("prompt_eval", stream.cli_prompt)
        stream.cli_prompt = None


def _opens_context(start: _Start, fact: Fact) -> bool:
    key = fact.values["key"]
    return not start.contexts or (key in ("n_seq_max", "n_ctx") and start.contexts[-1].has(key))


def _cache_line(context: _Context, fact: Fact) -> None:
    if fact.kind == "iswa":
        context.role = "swa" if fact.values["which"] == "SWA" else "main"
        context.facts.append(fact)
    elif fact.kind in ("kv_buffer", "v_pad"):
        context.buffers.append(fact)
    else:
        context.caches.append(Cache(role=context.role or "main", size=fact,
                                    facts=context.buffers))
        context.buffers, context.role = [], None


def scan_llamacpp(path: Path) -> LlamaScan:
    reader = _Reader()
    size = lines = 0
    last = b""
    with path.open("rb") as f:
        for lines, raw in enumerate(f, start=1):
            size += len(raw)
            last = raw
            reader.read(plain(lines, raw.decode("utf-8", "replace")))
    own = reader.streams.get("") or next(iter(reader.streams.values()), None)
    if own is not None and not own.starts and own.pending:
        own.open()  # a `--version` paste, a cut excerpt: its build and device lines are a run's
    done: dict[tuple[int, str], Fact] = {}
    for s in reader.streams.values():
        for key, eval_fact in s.done.items():
            done.setdefault(key, eval_fact)
    # a supervisor's copy of the run holds the same (start, task) pairs: one request each
    first = reader.first
    return LlamaScan(
        source=str(path), bytes=size, lines=lines, cut_off=bool(last) and not last.endswith(b"\n"),
        recognised=reader.recognised, settings=reader.settings,
        starts=[s.freeze() for s in own.starts] if own else [],
        timings=Timings(requests=len(done), evals=list(done.values()),
                        generations=sum(bool(PATTERNS["cli_timing"].search(f.text))
                                        for f in done.values()),
                        first_prompt=first.get("prompt_eval"),
                        first_eval=first.get("eval"), first_acceptance=first.get("acceptance")),
        errors=reader.errors,
    )
