"""What vLLM prints that carries identity: one pattern per message kind.

Each pattern matches the start of a log *message* (the text after the logger header
`LEVEL MM-DD HH:MM:SS [file.py:LINE] `), never the `file.py:LINE` itself, which
moves every release. Patterns are written against vLLM 0.32 and the older and
patched builds seen in real lab logs (see docs/resolver.md).
"""

from __future__ import annotations

import re
from enum import StrEnum


class Kind(StrEnum):
    args = "args"  # non-default args: {...}  (what was requested)
    namespace = "namespace"  # older servers: args: Namespace(...)  (every CLI value)
    server_version = "server_version"  # vLLM API server version X
    unknown_env = "unknown_env"
    architecture = "architecture"  # target first, then draft
    max_model_len = "max_model_len"
    draft_max_model_len = "draft_max_model_len"
    batched_tokens = "batched_tokens"
    scheduled_tokens = "scheduled_tokens"
    async_scheduling = "async_scheduling"
    engine_config = "engine_config"  # Initializing a V1 (V0, an) LLM engine (vX) with config:
    kv_capacity = "kv_capacity"
    kv_concurrency = "kv_concurrency"  # older builds print it on its own line
    kv_blocks = "kv_blocks"  # V0 engine: # GPU blocks: N, # CPU blocks: M; # cpu blocks: N
    num_gpu_blocks = "num_gpu_blocks"  # the block count the engine kept (the workers' minimum)
    attention_block = "attention_block"  # hybrid models: the block size the engine set
    kv_memory = "kv_memory"  # GPU/XPU worker: Available KV cache memory
    kv_memory_cpu = "kv_memory_cpu"  # CPU worker: Auto set (X/Y) GiB for KV cache
    kv_memory_in_use = "kv_memory_in_use"  # per rank, after profiling
    kv_memory_explicit = "kv_memory_explicit"  # reserved as kv_cache_memory_bytes says
    hybrid_disabled = "hybrid_disabled"  # sliding layers then allocate in full
    kv_dtype = "kv_dtype"  # Using fp8 data type to store kv cache
    kv_scale_default = "kv_scale_default"  # Using KV cache scaling factor 1.0 ...
    attention = "attention"
    graph_capture = "graph_capture"  # Capturing CUDA graphs (mixed prefill-decode, MODE)
    graph_done = "graph_done"
    cudagraph_change = "cudagraph_change"  # warnings that change the requested mode
    eager = "eager"
    rank_layout = "rank_layout"  # rank N in world size W is assigned as ...
    worker_rank = "worker_rank"  # world_size=W rank=R local_rank=L  (pid -> rank)
    expert_parallel = "expert_parallel"
    model_loading = "model_loading"
    banner = "banner"  # the ASCII-art banner's `version X`
    ready = "ready"  # Starting vLLM server on ...


# Message starts: matched right after the logger header, while the engine starts up.
STARTUP: dict[Kind, str] = {
    Kind.args: r"non-default args: (?P<args>\{.*\})",
    Kind.namespace: r"args: Namespace\((?P<args>.*)\)",
    Kind.server_version: r"vLLM API server version (?P<version>\S+)",
    Kind.unknown_env: r"Unknown vLLM environment variable detected: (?P<name>\S+)",
    Kind.architecture: r"Resolved architecture: (?P<arch>\S+)",
    Kind.max_model_len: r"Using max model len (?P<tokens>\d+)",
    Kind.draft_max_model_len: r"Overriding draft model max model len from \d+ to (?P<tokens>\d+)",
    Kind.batched_tokens: r"Chunked prefill is enabled with max_num_batched_tokens=(?P<tokens>\d+)",
    Kind.scheduled_tokens: r"max_num_scheduled_tokens is set to (?P<tokens>\d+)",
    Kind.async_scheduling: r"Asynchronous scheduling is (?P<state>enabled|disabled)",
    Kind.engine_config: r"Initializing an? (?:V\d )?LLM engine \(v(?P<version>[^)]*)\) "
                        r"with config: (?P<config>.*)",
    Kind.kv_capacity: r"(?P<device>[A-Z]+)(?: \+ host)? KV cache size: (?P<tokens>[\d,]+) tokens"
                      r"(?:, Maximum concurrency for (?P<len>[\d,]+) tokens per request: "
                      r"(?P<concurrency>[\d.]+)x)?",
    Kind.kv_concurrency: r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: "
                         r"(?P<concurrency>[\d.]+)x",
    # V0: `# GPU blocks: N, # CPU blocks: M` (M: swap space); the CPU backend `# cpu blocks: N`
    Kind.kv_blocks: r"# (?:(?P<device>[A-Z]+) blocks: (?P<blocks>\d+), # CPU blocks: \d+|"
                    r"(?P<cpu>cpu|CPU) blocks: (?P<cpu_blocks>\d+)\s*$)",
    Kind.num_gpu_blocks: r"Engine \d+: vllm cache_config_info with initialization after "
                         r"num_gpu_blocks is: (?P<blocks>\d+)",
    Kind.attention_block: r"Setting attention block size to (?P<tokens>\d+) tokens",
    Kind.kv_memory: r"Available KV cache memory: (?P<gib>[\d.]+) GiB",
    Kind.kv_memory_cpu: r"(?P<how>Auto|Explicitly) set \((?P<gib>[\d.]+)/(?P<total>[\d.]+)\) GiB "
                        r"for KV cache",
    Kind.kv_memory_in_use: r"Free memory on device .*Current kv cache memory in use is "
                           r"(?P<gib>[\d.]+) GiB",
    Kind.kv_memory_explicit: r"Initial free memory [\d.]+ GiB, reserved (?P<gib>[\d.]+) GiB "
                             r"memory for KV Cache",
    Kind.hybrid_disabled: r"Hybrid KV cache manager is disabled for this hybrid model",
    Kind.kv_dtype: r"Using (?P<dtype>\w+) data type to store kv cache",
    Kind.kv_scale_default: r"Using KV cache scaling factor (?P<scale>[\d.]+)",
    Kind.attention: r"Using (?:(?P<name>\w+) attention backend|(?P<xpu>Flash Attention) backend"
                    r"|FlashAttention version (?P<fa>\d+)|(?P<cpu>\w+) backend\.)",
    Kind.graph_done: r"Graph capturing finished in (?P<secs>[\d.]+) secs, took (?P<gib>[\d.]+) GiB",
    Kind.cudagraph_change: r"(?P<text>CUDAGraphMode\.\w+ is not supported.*; "
                           r"setting cudagraph_mode=(?P<mode>\w+).*)",
    Kind.eager: r"(?P<text>Enforce eager set|Cudagraph is disabled under eager mode)",
    Kind.rank_layout: r"rank (?P<rank>\d+) in world size (?P<world>\d+) is assigned as "
                      r"(?P<layout>.*)",
    Kind.worker_rank: r"world_size=(?P<world>\d+) rank=(?P<rank>\d+) local_rank=",
    Kind.expert_parallel: r"\[EP Rank (?P<rank>\d+)/(?P<size>\d+)\] Expert parallelism is enabled",
    Kind.model_loading: r"Model loading took (?P<gib>[\d.]+) GiB",
    Kind.ready: r"Starting vLLM (?:API )?server (?:\d+ )?on",
}

# Messages that are not at the start of a logger message: tqdm bars (fused with \r)
# and the banner's art. Scanned for during startup with their own literal patterns.
EMBEDDED: dict[Kind, str] = {
    Kind.graph_capture: r"Capturing CUDA graphs \((?P<what>[^)]*)\)",
    Kind.banner: "\u2588" + r"  version (?P<version>\S+)",
}

# Always scanned: the same literal pattern finds these in every chunk.
ENGINE_START = " LLM engine (v"  # Initializing a V1 / a V0 / an LLM engine (vX)
METRICS_SCRAPE = '"GET /metrics'  # uvicorn's access line for a /metrics scrape
KV_USAGE = r"KV cache usage: (?P<pct>[\d.]+)%"
# The counts of a `SpecDecoding metrics: ...` line (vLLM prints them in this order).
SPEC_COUNTS = r"Accepted: (?P<accepted>\d+) tokens, Drafted: (?P<drafted>\d+) tokens"
# vLLM's logger header (maybe coloured or condensed) or uvicorn's `ERROR:    `; from the
# 2nd letter: R is rarer than E.
ERROR_HEADER = r"RROR(?:(?:\x1b\[[\d;]*m)* (?:\x1b\[[\d;]*m)*\d\d-\d\d \d\d:\d\d:\d\d|:    |  )"
TRACEBACK = "Traceback (most recent call last):"

ANSI = rb"(?:\x1b\[[\d;]*m)*"  # colour codes, around the process name, level or header
# Where a message starts, after the shapes a line may take before it (all optional):
# a notebook export's `356.7s 379 `, a `(Process pid=N)` prefix (colour-coded or not), and
# a logger header: `LEVEL MM-DD HH:MM:SS [file.py:LINE] ` (V1), `... file.py:LINE] ` (V0),
# or a condensed `LEVEL  ` (an excerpt with the time and place cut out).
PREFIX = re.compile(
    rb"(?:\d+(?:\.\d+)?s \d+ )?" + ANSI
    + rb"(?:\((?P<proc>[^()\n]*?)(?: pid=(?P<pid>\d+)[^()\n]*)?\)" + ANSI + rb" )?" + ANSI
    + rb"(?:(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)" + ANSI
    + rb"(?: " + ANSI + rb"\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?" + ANSI + rb" " + ANSI
    + rb"(?:\[[^\]\n]*\]|[\w.-]+:\d+\])" + ANSI + rb" | {2,}))?"
)
# What the startup scanner anchors on: the end of a header (`] `, maybe coloured), or a
# condensed header at a line start. A literal `]` first keeps the common case fast.
HEADER_END = rb"(?:\]" + ANSI + rb" |^(?:INFO|WARNING|DEBUG|ERROR) {2,})"

DETAIL = {kind: re.compile(pattern) for kind, pattern in {**STARTUP, **EMBEDDED}.items()}


def _ungrouped(pattern: str) -> str:
    """The same pattern without named groups (they slow a large alternation down)."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


def startup_scanner() -> re.Pattern[bytes]:
    """One alternation over every startup message, anchored on the header's end."""
    alternatives = "|".join(f"(?P<{kind.value}>{_ungrouped(p)})" for kind, p in STARTUP.items())
    return re.compile(HEADER_END + rb"(?:" + alternatives.encode() + rb")", re.MULTILINE)


def embedded_scanners() -> dict[Kind, re.Pattern[bytes]]:
    """One pattern each: alone, each has a literal prefix, which `re` searches for fast."""
    return {kind: re.compile(_ungrouped(p).encode()) for kind, p in EMBEDDED.items()}
