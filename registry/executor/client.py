"""The benchmark client: each prompt sent once, streamed, every token timestamped.

The engine plug-in's streaming API (vLLM: `/v1/completions` or `/v1/chat/completions`
with `return_token_ids`; llama.cpp: `/completion` with `return_tokens`), so each chunk
carries its token ids;
each token is stamped with its chunk's arrival time (`perf_counter` offset from the
request's start). No warmup, no retries, no subsets: a failed request is a row with
an error, and a transport fault (engine gone, timeout) stops the suite.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from registry.engines.base import Chunk, EnginePlugin
from registry.engines.plugin import engine_for
from registry.executor.sse import EventParser
from registry.executor.suite import Prompt, Suite
from registry.formats.rundir import BenchRow
from registry.recipe.schema import BenchmarkSpec


def request_body(bench: BenchmarkSpec, model: str, prompt: str, max_tokens: int,
                 engine: str | None = None) -> dict[str, Any]:
    """`engine`: its name (None: the engine of a recipe that names none)."""
    return engine_for(engine).request_body(bench, model, prompt, max_tokens)


@dataclass
class Stream:
    """What one streamed response carried, as it arrived."""

    token_ids: list[int] = field(default_factory=list)
    token_times: list[float] = field(default_factory=list)
    chunk_times: list[float] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    error: str | None = None

    timings: dict[str, Any] = field(default_factory=dict)

    def add(self, chunk: Chunk, at: float) -> None:
        if chunk.error:
            self.error = chunk.error
        if chunk.usage:
            self.usage = chunk.usage
        if chunk.timings:
            self.timings = chunk.timings
        if chunk.token_ids:
            self.chunk_times.append(at)
            self.token_ids += chunk.token_ids
            self.token_times += [at] * len(chunk.token_ids)
        self.text.append(chunk.text)
        self.finish_reason = chunk.finish_reason or self.finish_reason


async def stream_one(client: httpx.AsyncClient, path: str, body: dict[str, Any],
                     engine: EnginePlugin) -> Stream:
    """Stamp each server-sent event with the arrival of the bytes that completed it.

    Events are only framed while streaming (registry.executor.sse); JSON is parsed after
    the stream ends, so the client spends as little CPU as it can while the server is
    still sending (on a small host the client shares a core with the server's API process).
    """
    out = Stream()
    start = time.perf_counter()
    events: list[tuple[float, str]] = []
    parser = EventParser()
    async with client.stream("POST", path, json=body) as response:
        if response.status_code != 200:
            detail = (await response.aread()).decode("utf-8", "replace")[:500]
            out.error = f"HTTP {response.status_code}: {detail}"
            return out
        async for data in response.aiter_raw():
            events += parser.feed(data, time.perf_counter() - start)
    events += parser.close(time.perf_counter() - start)
    for at, event in events:
        if event == "[DONE]":
            continue
        try:
            out.add(engine.read_chunk(json.loads(event)), at)
        except ValueError:
            out.error = f"a server-sent event is not JSON: {event[:200]!r}"
    return out


def check(stream: Stream, allow_reuse: bool) -> str | None:
    """The row's error, judged from what arrived."""
    if stream.error:
        return stream.error
    reported = stream.usage.get("completion_tokens")
    if reported != len(stream.token_ids):
        carried = len(stream.token_ids)
        return f"usage says {reported} completion tokens, the stream carried {carried}"
    second = _second_opinion(stream)
    if second:
        return second
    cached = cached_tokens(stream)
    if cached is None and not allow_reuse:
        return ("cached_tokens not reported, so prefix reuse cannot be excluded: "
                "set engine.args.enable_prompt_tokens_details = true")
    if cached and not allow_reuse:
        return f"prefix cache reuse: {cached} cached prompt tokens (the recipe forbids reuse)"
    return None


def _second_opinion(stream: Stream) -> str | None:
    """The server's own count (llama-server's `timings.predicted_n`) must match the stream."""
    predicted = stream.timings.get("predicted_n")
    if predicted is not None and predicted != len(stream.token_ids):
        return (f"the server's timings say {predicted} tokens were generated, the stream "
                f"carried {len(stream.token_ids)}")
    return None


def cached_tokens(stream: Stream) -> int | None:
    details = stream.usage.get("prompt_tokens_details") or {}
    value = details.get("cached_tokens")
    return int(value) if value is not None else None


def make_row(suite: Suite, index: int, prompt: Prompt, started: float, stream: Stream,
             error: str | None, round_: int = 0) -> BenchRow:
    text = "".join(stream.text)
    return BenchRow(
        suite=suite.name, index=index, round=round_, prompt_id=prompt.id,
        prompt_sha256=prompt.sha256,
        prompt_tokens=stream.usage.get("prompt_tokens"), cached_tokens=cached_tokens(stream),
        completion_tokens=stream.usage.get("completion_tokens"),
        finish_reason=stream.finish_reason, request_started_epoch_s=started,
        token_ids=stream.token_ids, token_times_s=stream.token_times,
        chunk_times_s=stream.chunk_times, text=text,
        text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(), error=error,
        server_timings={k: float(v) for k, v in stream.timings.items()
                        if isinstance(v, int | float)} or None)


class SuiteRunner:
    """Sends one suite at the recipe's concurrency and keeps the rows in prompt order."""

    def __init__(self, base_url: str, model: str, bench: BenchmarkSpec, *,
                 request_timeout: float, on_row: Callable[[BenchRow], None] | None = None,
                 round_: int = 0, engine: str | None = None):
        self.engine = engine_for(engine)
        self.round = round_
        self.base_url = base_url
        self.model = model
        self.bench = bench
        self.request_timeout = request_timeout
        self.on_row = on_row
        self.fault: str | None = None  # set by the first transport error or timeout

    async def _one(self, client: httpx.AsyncClient, gate: asyncio.Semaphore, suite: Suite,
                   index: int, prompt: Prompt) -> BenchRow | None:
        async with gate:
            if self.fault:
                return None  # the suite stopped: never send the rest as a subset
            body = self.engine.request_body(self.bench, self.model, prompt.prompt,
                                            suite.max_tokens)
            started = time.time()
            try:
                async with asyncio.timeout(self.request_timeout):
                    stream = await stream_one(client, self.engine.endpoint(self.bench.api), body,
                                              self.engine)
                error = check(stream, self.bench.allow_prefix_reuse)
            except TimeoutError:
                stream, error = Stream(), f"timed out after {self.request_timeout:g} s"
                self.fault = self.fault or f"request {prompt.id!r} {error}"
            except httpx.HTTPError as e:
                stream, error = Stream(), f"transport error: {type(e).__name__}: {e}"
                self.fault = self.fault or f"request {prompt.id!r} failed ({error})"
            row = make_row(suite, index, prompt, started, stream, error, self.round)
            if self.on_row:
                self.on_row(row)
            return row

    async def run(self, suites: list[Suite]) -> list[BenchRow]:
        rows: list[BenchRow] = []
        gate = asyncio.Semaphore(self.bench.concurrency)
        limits = httpx.Limits(max_connections=self.bench.concurrency,
                              max_keepalive_connections=None if self.engine.keep_alive else 0)
        timeout = httpx.Timeout(self.request_timeout, connect=10.0)
        async with httpx.AsyncClient(base_url=self.base_url, timeout=timeout,
                                     limits=limits) as client:
            for suite in suites:
                done = await asyncio.gather(*(self._one(client, gate, suite, i, p)
                                              for i, p in enumerate(suite.prompts)))
                rows += [r for r in done if r is not None]
                if self.fault:
                    break
        return rows


def run_suites(
    base_url: str, model: str, bench: BenchmarkSpec, suites: list[Suite], *,
    request_timeout: float, on_row: Callable[[BenchRow], None] | None = None, round_: int = 0,
    engine: str | None = None,
) -> tuple[list[BenchRow], str | None]:
    """Rows of every prompt sent, and the fault that stopped the suite (if any)."""
    runner = SuiteRunner(base_url, model, bench, request_timeout=request_timeout, on_row=on_row,
                         round_=round_, engine=engine)
    rows = asyncio.run(runner.run(suites))
    return rows, runner.fault
