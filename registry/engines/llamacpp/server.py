"""llama.cpp as an engine plug-in: the `llama-server` binary, its argv, its native
streaming `/completion` API (token ids with `return_tokens`, and the `timings` object
of the last event: the server's own prompt and decode figures, a second opinion), and
its log's signature."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registry.engines.base import Chunk, Given, owned_keys_clash
from registry.engines.llamacpp import args as table
from registry.engines.llamacpp.ggml import kv_bytes
from registry.engines.llamacpp.logs.messages import SIGNATURE
from registry.errors import InvalidInput
from registry.formats.identity import ResolvedIdentity
from registry.formats.record import PublishedFigure
from registry.logs import LogScan
from registry.recipe.schema import BenchmarkSpec, PrecisionSpec, Recipe

SERVER_VAR = "REGISTRY_LLAMA_SERVER"
OWNED_KEYS = {"prompt", "stream", "return_tokens", "n_predict", "temperature", "top_p",
              "seed", "cache_prompt"}
# stop_type -> the OpenAI finish reason the registry's rows use
FINISH = {"limit": "length", "eos": "stop", "word": "stop", "none": None}


def cached_build() -> Path:
    """Where tools/llama_server.sh leaves its build."""
    root = Path(os.environ.get("LLAMA_CPP_CACHE", Path.home() / ".cache" / "registry"))
    return root / f"llama.cpp-b{table.BUILD}" / "bin" / "llama-server"


class LlamaServer:
    name = "llama.cpp"
    log_signature = SIGNATURE
    # cpp-httplib closes a kept-alive connection after a few requests: a request sent on
    # it then fails with "server disconnected"; each request gets its own connection
    keep_alive = False
    unnamed_default = False
    model_is_file = True  # a GGUF
    has_engine_core = False  # one process
    distributions: tuple[str, ...] = ()  # a binary, not a Python package
    package = None

    def start_command(self, version: str | None, environ: Mapping[str, str]) -> list[str]:
        """$REGISTRY_LLAMA_SERVER, else the setup script's cached build, else PATH."""
        given = environ.get(SERVER_VAR)
        candidates = [given] if given else [str(cached_build()), shutil.which("llama-server")]
        for candidate in candidates:
            if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
                return [candidate]
        raise InvalidInput("no llama-server binary" + (f" at {SERVER_VAR}={given}" if given
                                                       else ""),
                           hint="run tools/llama_server.sh (builds it), or set "
                                f"{SERVER_VAR} to one")

    def container_command(self, version: str | None = None) -> list[str]:
        """In an image the server is on the image's PATH."""
        return ["llama-server"]

    def render_argv(self, args: dict[str, Any], version: str | None = None) -> list[str]:
        return table.render_argv(args)  # one build's table (b11434) for every version

    def serve_args(self, host: str, port: int) -> list[str]:
        # verbosity 4: from 2026 builds the default (3) hides libllama's loader, context
        # and KV cache lines, the evidence the resolver reads
        return ["--host", host, "--port", str(port), "--metrics", "--verbosity", "4"]

    def endpoint(self, api: str) -> str:
        if api != "completions":
            raise InvalidInput(f"benchmark.api {api!r}: the llama.cpp client streams "
                               "/completion (raw prompts)", hint='use api = "completions"')
        return "/completion"

    def request_body(self, bench: BenchmarkSpec, model: str, prompt: str,
                     max_tokens: int) -> dict[str, Any]:
        owned_keys_clash(bench, OWNED_KEYS)
        # cache_prompt false: every prompt is computed cold (the server's default reuses)
        return {"prompt": prompt, "n_predict": max_tokens, "temperature": bench.temperature,
                "top_p": bench.top_p, "seed": bench.seed, "stream": True,
                "return_tokens": True, "cache_prompt": False, **bench.request_extra}

    def read_chunk(self, chunk: dict[str, Any]) -> Chunk:
        error = chunk.get("error")
        if error:
            return Chunk(error=f"server error: {error}")
        if not chunk.get("stop"):
            return Chunk(token_ids=list(chunk.get("tokens") or []),
                         text=chunk.get("content") or "")
        timings = chunk.get("timings") or {}
        usage = {"completion_tokens": chunk.get("tokens_predicted"),
                 "prompt_tokens": chunk.get("tokens_evaluated")}
        if "cache_n" in timings:
            usage["prompt_tokens_details"] = {"cached_tokens": timings["cache_n"]}
        return Chunk(token_ids=list(chunk.get("tokens") or []), text=chunk.get("content") or "",
                     finish_reason=FINISH.get(str(chunk.get("stop_type"))), usage=usage,
                     timings=timings)

    def kv_bytes(self, cache_type: str, values: int) -> int:
        return kv_bytes(cache_type, values)

    def check_precision(self, precision: PrecisionSpec) -> PrecisionSpec:
        from registry.engines.llamacpp.recipe import check_precision

        return check_precision(precision)

    # The recipe and resolver halves are imported when asked for: a client never loads them.
    def normalize_args(self, recipe: Recipe, path: Path) -> dict[str, Any]:
        from registry.engines.llamacpp.recipe import normalize_args

        return normalize_args(recipe, path)

    def declared(self, recipe: Recipe) -> dict[str, Any]:
        from registry.engines.llamacpp.declared import recipe_declared

        return recipe_declared(recipe)

    def declared_launch(self, argv: list[str]) -> dict[str, Any] | None:
        from registry.engines.llamacpp.declared import launch_declared

        return launch_declared(argv)

    def declared_named(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {}  # named values in a capsule are a vLLM launcher's; llama-server takes argv

    def declared_log(self, log: Path) -> tuple[dict[str, Any], int] | None:
        return None  # a launcher's printed settings are read by the resolver (declared there)

    def scan_log(self, log: Path, markers: dict[str, str]) -> LogScan:
        """No facts: llama-server prints no Python traceback and no ready line in vLLM's
        terms; `resolve` reads the log with the llama.cpp reader."""
        return LogScan(source=str(log), bytes=log.stat().st_size, lines=0, cut_off=False,
                       facts=[], engine_restarts=0)

    def resolve(self, run_dir: Path, log: Path, name: str, recipe: Recipe | None,
                given: Given) -> ResolvedIdentity:
        from registry.engines.llamacpp.declared import recipe_declared
        from registry.engines.llamacpp.resolve import resolve_llamacpp

        return resolve_llamacpp(
            log, name, recipe_declared(recipe) if recipe else {}, checkpoint=given.checkpoint,
            models=() if given.confined or not recipe else (recipe.model.path,),
            log_models=not given.confined)

    def published_figures(self, path: Path, name: str) -> list[PublishedFigure]:
        """A llama-bench table (markdown, `-o json`, `-o jsonl`): one figure a row."""
        from registry.engines.llamacpp.bench import bench_figures, read_bench

        table = read_bench(path, name)
        return bench_figures(table) if table else []


LLAMACPP = LlamaServer()
