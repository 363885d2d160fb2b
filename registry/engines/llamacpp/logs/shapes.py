"""What the llama-server log reader returns: per server start, its models (the target,
then a draft), its contexts (the target's, then a draft's), each context's caches, and
the request timings counted over the whole file."""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.logs.facts import Fact


class FactGroup(Frozen):
    """Facts in log order, looked up by kind."""

    facts: list[Fact] = Field(default_factory=list)

    def all(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def first(self, kind: str) -> Fact | None:
        return next((f for f in self.facts if f.kind == kind), None)

    def last(self, kind: str) -> Fact | None:
        found = self.all(kind)
        return found[-1] if found else None


class ModelBlock(FactGroup):
    """One `llama_model_loader` block and the load lines after it (file type, tensor
    counts, offload, buffers) until the next model or context."""

    role: str = Field(description="target, or draft (a draft model or an MTP head)")


class Cache(FactGroup):
    """One `llama_kv_cache: size = ...` line with its buffer lines; `role` is main, or swa
    when `llama_kv_cache_iswa: creating SWA KV cache` announced it."""

    role: str
    size: Fact


class Context(FactGroup):
    """One `llama_context` (old builds: `llama_new_context_with_model`): its settings and
    caches. A server's first context is the target's; a later one is a draft's."""

    caches: list[Cache] = Field(default_factory=list)


class ServerStart(FactGroup):
    """One llama-server process in the file: from its `loading model` line (with the build
    and device lines printed just before it) to the next start."""

    stream: str = ""
    models: list[ModelBlock] = Field(default_factory=list)
    contexts: list[Context] = Field(default_factory=list)


class Timings(Frozen):
    """Completed requests (final `eval time` lines), counted once per server start and task
    even when a supervisor wrote the whole run twice, and the first of each figure."""

    requests: int = 0
    generations: int = Field(0, description="of these, llama-cli timing blocks (one generation "
                             "each, its eval line counting `runs`)")
    evals: list[Fact] = Field(default_factory=list, description="each completed request's "
                              "final `eval time` line, once")
    first_prompt: Fact | None = None
    first_eval: Fact | None = None
    first_acceptance: Fact | None = None


class LlamaScan(Frozen):
    source: str
    bytes: int
    lines: int
    cut_off: bool
    recognised: Fact | None = Field(description="the first line only llama-server prints")
    settings: list[Fact] = Field(default_factory=list, description="`key=value` lines a "
                                 "launcher printed before the server's first line (declared)")
    starts: list[ServerStart] = Field(description="the server's own stream's starts")
    timings: Timings
    errors: list[Fact] = Field(default_factory=list, description="error lines (capped)")
