"""The run directory: what one execution leaves behind, and its file formats.

It is the contract between the executor (writes it), the resolver (reads the
evidence) and seal (hashes all of it). See docs/run-directory.md.
"""


from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.files import read_model as read_model  # generic: rundir.read_model(path, Frozen)
from registry.base.model import Frozen, empty_list
from registry.errors import InvalidInput

SERVER_LOG = "server.log"  # required: engine stdout + stderr
RECIPE_JSON = "recipe.json"  # the normalized recipe (self-contained)
RECIPE_TOML = "recipe.toml"  # accepted too: a recipe file as written
LAUNCH = "launch.json"  # LaunchPlan
ENVIRONMENT = "environment.json"  # host facts: os, python, packages, devices
METRICS_BEFORE = "metrics-before.prom"
METRICS_AFTER = "metrics-after.prom"
BENCH = "bench.json"  # Bench: raw rows
OUTPUTS = "outputs.jsonl"  # optional extra outputs
STATUS = "status.json"  # RunStatus
SUITES = "suites"  # suites/<name>.jsonl: each prompt suite exactly as sent
PROBE = "probe.json"  # the host speed probe before and after the suite (executor.probe)
GPU_SAMPLES = "gpu-samples.csv"  # nvidia-smi samples through the suite, when it exists
STARTS = "starts"  # starts/<k>/: engine start k of `run --starts N` (its log, status, probe)


class LaunchPlan(Frozen):
    """Everything needed to start the engine, derived only from recipe + platform."""

    schema_: str = Field("registry.launch/v1", alias="schema")
    platform: str
    argv: list[str]
    env: dict[str, str] = Field(description="variables set on top of a minimal base env")
    cwd: str
    host: str = "127.0.0.1"
    port: int
    cache_dirs: dict[str, str] = Field(default_factory=dict, description="private, cold caches")
    launcher: str | None = Field(None, description="launcher script, when one wraps the engine")
    engine: str = Field("vllm", description="the engine plug-in (recipe engine.name)")
    python: str | None = Field(
        None, description="the interpreter a `python` command runs under (engine.python); "
        "unset: the registry's own")


class BenchRow(Frozen):
    """One prompt sent once. Raw facts only; every metric is re-derived from these."""

    suite: str
    index: int
    round: int = Field(0, description="suite pass on the same engine (reproduce adds rounds)")
    start: int = Field(0, description="engine start within one record (`run --starts N`); "
                                      "rows of later starts are kept in `more_rounds`")
    prompt_id: str
    prompt_sha256: str
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    request_started_epoch_s: float | None = None
    token_ids: list[int] = Field(default_factory=empty_list)
    token_times_s: list[float] = Field(
        default_factory=empty_list,
        description="per token: its chunk's arrival, s after request start"
    )
    chunk_times_s: list[float] = Field(default_factory=empty_list, description="per streamed chunk")
    text: str | None = None
    text_sha256: str | None = None
    error: str | None = None
    server_timings: dict[str, float] | None = Field(
        None, description="the engine's own figures for the request (llama-server's "
        "`timings`): a second opinion, never what a metric is derived from")


class SuiteRef(Frozen):
    name: str
    sha256: str | None = None
    path: str | None = None
    prompts: int | None = None


class Bench(Frozen):
    schema_: str = Field("registry.bench/v1", alias="schema")
    api: str
    model: str
    params: dict[str, Any] = Field(description="max_tokens, temperature, top_p, seed, extras")
    suites: list[SuiteRef]
    rows: list[BenchRow] = Field(description="the first pass: what contracts judge")
    more_rounds: list[BenchRow] = Field(
        default_factory=empty_list, description="later passes on the same engine (reproduce's "
        "extra rounds, `round` >= 1): speed figures only")


    @property
    def timed_rows(self) -> list[BenchRow]:
        """Every pass's rows: what the speed figures use."""
        return [*self.rows, *self.more_rounds]


class RunState(StrEnum):
    running = "running"
    complete = "complete"
    failed = "failed"
    unknown = "unknown"  # a record of a run that left no status.json


class RunStatus(Frozen):
    state: RunState
    reason: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    cleanup: dict[str, Any] = Field(default_factory=dict, description="teardown checks")
    ready_s: float | None = Field(None, description="engine start to serving, seconds")
    placement: dict[str, Any] | None = Field(
        None, description="CPUs of the engine's processes once serving (executor placement)")


class Accelerator(Frozen):
    """One device as its vendor tool lists it (the whole host, whatever the run used)."""

    vendor: str
    index: int
    name: str = Field(description="the device model, e.g. NVIDIA H200")
    driver: str | None = None
    memory_mib: int | None = Field(None, description="total device memory")


class EnginePackage(Frozen):
    """Where the engine package is installed, as the engine's interpreter finds it."""

    path: str
    distribution: str | None = None
    version: str | None = None


class Environment(Frozen):
    """Host facts (environment.json), gathered without importing torch or vLLM: the
    host's from the registry's process, the Python ones (`python`, `packages`, the
    engine's install) from the interpreter that runs the engine."""

    schema_: str = Field("registry.environment/v1", alias="schema")
    os: str
    kernel: str
    machine: str
    hostname: str
    registry: str | None = Field(None, description="the registry version that ran it")
    python: str = Field(description="the engine interpreter's version")
    python_implementation: str
    python_executable: str | None = Field(None, description="the engine's interpreter")
    python_prefix: str | None = Field(None, description="its sys.prefix (venv)")
    cpu: str | None = None
    cpu_count: int | None = None
    cpu_affinity: int | None = Field(None, description="CPUs this process may run on")
    memory_gib: float | None = None
    packages: dict[str, str] = Field(default_factory=dict, description="distribution -> version")
    engine_source: dict[str, Any] | None = Field(
        None, description="the engine's PEP 610 direct_url.json (source builds)")
    engine_package: EnginePackage | None = Field(
        None, description="the engine package's folder and distribution")
    devices: dict[str, str] = Field(default_factory=dict, description="vendor tool -> output")
    accelerators: list[Accelerator] = Field(
        default_factory=empty_list, description="the devices parsed from `devices`, by index")
    inherited_env: dict[str, str] = Field(
        default_factory=dict, description="caller variables the engine inherited (launch env "
        "goes on top)")


def require_run_dir(path: Path) -> Path:
    if not path.is_dir():
        raise InvalidInput(f"{path}: not a run directory")
    if not (path / SERVER_LOG).is_file():
        raise InvalidInput(f"{path}: no {SERVER_LOG}", hint="a run directory holds the engine log")
    return path
