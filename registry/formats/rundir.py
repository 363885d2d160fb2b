"""The run directory: what one execution leaves behind, and its file formats.

It is the contract between the executor (writes it), the resolver (reads the
evidence) and seal (hashes all of it). See docs/run-directory.md.
"""

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from registry.base.files import read_model as read_model  # generic: rundir.read_model(path, Frozen)
from registry.base.model import Frozen, empty_list
from registry.errors import InvalidInput
from registry.formats.runfacts import (
    BENCH,
    CONTAINER,
    ENVIRONMENT,
    GPU_SAMPLES,
    LAUNCH,
    LAUNCHER,
    LAUNCHER_SCRIPT,
    METRICS_AFTER,
    METRICS_BEFORE,
    OUTPUTS,
    PROBE,
    RECIPE_JSON,
    RECIPE_TOML,
    SERVER_LOG,
    STARTS,
    STATUS,
    SUITES,
    Accelerator,
    ContainerFacts,
    EnginePackage,
    Environment,
    LauncherFacts,
    RunState,
)

# the run directory's public names: its own formats, and those a record keeps (in
# registry/formats/runfacts.py, so that a record reader builds only those)
__all__ = [
    "BENCH",
    "CONTAINER",
    "ENVIRONMENT",
    "GPU_SAMPLES",
    "LAUNCH",
    "LAUNCHER",
    "LAUNCHER_SCRIPT",
    "METRICS_AFTER",
    "METRICS_BEFORE",
    "OUTPUTS",
    "PROBE",
    "RECIPE_JSON",
    "RECIPE_TOML",
    "SERVER_LOG",
    "STARTS",
    "STATUS",
    "SUITES",
    "Accelerator",
    "Bench",
    "BenchRow",
    "ContainerFacts",
    "ContainerLaunch",
    "EnginePackage",
    "Environment",
    "LaunchPlan",
    "LauncherFacts",
    "RunState",
    "RunStatus",
    "SuiteRef",
    "read_model",
    "require_run_dir",
]


class EngineStop(Frozen):
    """How a launcher's engine is stopped (recipe `[engine.stop]`, docs/containers.md):
    the package's own stop command first (the lab's packages: `docker stop -t 30 NAME`),
    then a signal to the launcher, each with its grace; SIGKILL of the group only where
    both this and the host's policy allow it."""

    command: list[str] | None = Field(
        None, min_length=1, max_length=64, description="run first, as an argv (never a "
        "shell line), in the engine's environment and folder; may use ${VAR}")
    signal: Literal["SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP"] = Field(
        "SIGTERM", description="then sent to the launcher's process")
    grace_s: float = Field(30.0, gt=0, le=3600, description="after the command, and after "
                                                            "the signal")
    kill: bool = Field(False, description="SIGKILL the group when the graces ran out (the "
                                          "host policy's `stop.kill` must allow it too)")


class ContainerLaunch(Frozen):
    """The container a plan starts: its runtime, image and name (the argv holds the rest)."""

    runtime: str = Field(description="podman | docker")
    image: str
    name: str = Field(description="the container's name: `<runtime> stop NAME` stops it")
    pinned: bool = Field(description="the image is named by its digest")
    cidfile: str | None = Field(None, description="where the runtime writes the container's "
                                                  "id (`--cidfile`)")


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
    stop: EngineStop | None = Field(None, description="the launcher's stop (recipe "
                                                      "[engine.stop]); unset: the host's")
    engine: str | None = Field(None, description="the engine plug-in (recipe engine.name); "
                               "absent from plans written before there was a second engine")
    container: ContainerLaunch | None = Field(None, description="set: argv runs a container")
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


class RunStatus(Frozen):
    state: RunState
    reason: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    cleanup: dict[str, Any] = Field(default_factory=dict, description="teardown checks")
    ready_s: float | None = Field(None, description="engine start to serving, seconds")
    placement: dict[str, Any] | None = Field(
        None, description="CPUs of the engine's processes once serving (executor placement)")


def require_run_dir(path: Path) -> Path:
    if not path.is_dir():
        what = "not a run directory" if path.exists() else "no such run directory"
        raise InvalidInput(f"{path}: {what}")
    if not (path / SERVER_LOG).is_file():
        raise InvalidInput(f"{path}: no {SERVER_LOG}", hint="a run directory holds the engine log")
    return path
