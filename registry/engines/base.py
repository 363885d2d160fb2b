"""What an engine must provide to the registry, one interface for every engine: its start
command and argv, the streaming request and how to read its chunks, its log's signature,
the bytes a KV value takes, its recipe arguments checked, what a recipe declares and how
its log resolves (docs/engines.md lists what a new engine adds)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput

if TYPE_CHECKING:  # the types only: the engines' own modules sit above these layers
    from registry.formats.identity import ResolvedIdentity
    from registry.formats.record import PublishedFigure
    from registry.logs import LogScan
    from registry.recipe.schema import BenchmarkSpec, PrecisionSpec, Recipe
    from registry.resolve.inputs import Checkpoints


class Chunk(Frozen):
    """What one streamed event carried, in the registry's terms."""

    token_ids: list[int] = Field(default_factory=list)
    text: str = ""
    finish_reason: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict, description="OpenAI-style usage")
    timings: dict[str, Any] = Field(default_factory=dict, description="the server's own")
    error: str | None = None


@dataclass
class Given:
    """What the caller of `resolve` already has: the checkpoints named on the command line,
    the log already scanned, a record's sealed checkpoint evidence."""

    checkpoint: Path | None = None
    draft_checkpoint: Path | None = None
    scan: LogScan | None = None  # this log, scanned (seal reads it too)
    checkpoints: Checkpoints | None = None  # a record's sealed evidence, filled in place
    confined: bool = False  # read no checkpoint the log or recipe names (an import)


class EnginePlugin(Protocol):
    name: str
    log_signature: str  # a regular expression only this engine's log lines match
    # the engine of evidence that names none (one engine says so): a log no signature
    # claims, a recipe or launch plan written before there was a second engine
    unnamed_default: bool
    keep_alive: bool  # may the client reuse a connection for the next request?
    model_is_file: bool  # its checkpoint is one file (a GGUF), not a folder
    has_engine_core: bool  # an engine-core process beside its workers (placement pins it)
    distributions: tuple[str, ...]  # the Python distributions that install it (a binary: none)
    package: str | None  # the import package they install

    def start_command(self, version: str | None, environ: Mapping[str, str]) -> list[str]: ...

    def container_command(self, version: str | None = None) -> list[str]: ...

    def render_argv(self, args: dict[str, Any], version: str | None = None) -> list[str]: ...

    def serve_args(self, host: str, port: int) -> list[str]: ...

    def endpoint(self, api: str) -> str: ...

    def request_body(self, bench: BenchmarkSpec, model: str, prompt: str,
                     max_tokens: int) -> dict[str, Any]: ...

    def read_chunk(self, chunk: dict[str, Any]) -> Chunk: ...

    def kv_bytes(self, cache_type: str, values: int) -> int: ...

    def check_precision(self, precision: PrecisionSpec) -> PrecisionSpec:
        """A recipe's [precision] in the engine's terms, completed (raises ValueError)."""
        ...

    def normalize_args(self, recipe: Recipe, path: Path) -> dict[str, Any]:
        """The recipe's `engine.args` checked against the engine's own argument table and
        completed from the structured tables (raises InvalidRecipe)."""
        ...

    def declared(self, recipe: Recipe) -> dict[str, Any]:
        """What the recipe declares, under the identity field names."""
        ...

    def declared_launch(self, argv: list[str]) -> dict[str, Any] | None:
        """What a capsule's launch command line declares, under the identity field names;
        None when the line is not this engine's (the unnamed default reads any line)."""
        ...

    def declared_named(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Named values (a launch JSON's keys, an identity or env file's KEY=VALUE) under
        the identity field names, where they spell this engine's arguments."""
        ...

    def declared_log(self, log: Path) -> tuple[dict[str, Any], int] | None:
        """What the engine's log says it was asked for beyond its defaults (fields, line),
        read apart from the resolver; None when the log prints no such line."""
        ...

    def scan_log(self, log: Path, markers: dict[str, str]) -> LogScan:
        """The log's failure evidence (errors, tracebacks, ready) and `[[expect]]` counts."""
        ...

    def resolve(self, run_dir: Path, log: Path, name: str, recipe: Recipe | None,
                given: Given) -> ResolvedIdentity:
        """The run's identity from its log `name` (at `log`), each field with evidence."""
        ...

    def published_figures(self, path: Path, name: str) -> list[PublishedFigure]:
        """Figures the engine's own tools publish in a capsule file `name` (at `path`), as
        published figures, unproven (llama.cpp: llama-bench tables); none: []."""
        ...


def owned_keys_clash(bench: BenchmarkSpec, owned: set[str]) -> None:
    """The client sets these request keys itself: the recipe may not."""
    clash = sorted(owned & set(bench.request_extra))
    if clash:
        raise InvalidInput(f"benchmark.request_extra.{clash[0]}: the client sets this key",
                           hint="declare it in [benchmark] (max_tokens, temperature, top_p, seed)")

