"""What an engine must provide to the registry, one interface for every engine: its start
command and argv, the streaming request and how to read its chunks, its log's signature,
and the bytes a KV value takes (docs/engines.md lists what a new engine adds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.recipe.schema import BenchmarkSpec


class Chunk(Frozen):
    """What one streamed event carried, in the registry's terms."""

    token_ids: list[int] = Field(default_factory=list)
    text: str = ""
    finish_reason: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict, description="OpenAI-style usage")
    timings: dict[str, Any] = Field(default_factory=dict, description="the server's own")
    error: str | None = None


class EnginePlugin(Protocol):
    name: str
    log_signature: str  # a regular expression only this engine's log lines match
    keep_alive: bool  # may the client reuse a connection for the next request?

    def start_command(self, version: str | None, environ: Mapping[str, str]) -> list[str]: ...

    def container_command(self, version: str | None = None) -> list[str]: ...

    def render_argv(self, args: dict[str, Any], version: str | None = None) -> list[str]: ...

    def serve_args(self, host: str, port: int) -> list[str]: ...

    def endpoint(self, api: str) -> str: ...

    def request_body(self, bench: BenchmarkSpec, model: str, prompt: str,
                     max_tokens: int) -> dict[str, Any]: ...

    def read_chunk(self, chunk: dict[str, Any]) -> Chunk: ...

    def kv_bytes(self, cache_type: str, values: int) -> int: ...


def owned_keys_clash(bench: BenchmarkSpec, owned: set[str]) -> None:
    """The client sets these request keys itself: the recipe may not."""
    clash = sorted(owned & set(bench.request_extra))
    if clash:
        raise InvalidInput(f"benchmark.request_extra.{clash[0]}: the client sets this key",
                           hint="declare it in [benchmark] (max_tokens, temperature, top_p, seed)")
