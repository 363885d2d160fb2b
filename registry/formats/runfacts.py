"""What a record keeps of its run directory: the directory's file names, the state the
run ended in and the host facts (environment.json).

Apart from the run directory's other formats (registry/formats/rundir.py, which
re-exports these) so that a record reader builds only the models a record holds.
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from registry.base.model import Frozen, empty_list

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
CONTAINER = "container.json"  # ContainerFacts: the image and runtime a container run used
LAUNCHER = "launcher.json"  # LauncherFacts: the launcher, its printed settings, its exit
LAUNCHER_SCRIPT = "launcher.script"  # the launcher's bytes as they were when the run began
STARTS = "starts"  # starts/<k>/: engine start k of `run --starts N` (its log, status, probe)


class RunState(StrEnum):
    running = "running"
    complete = "complete"
    failed = "failed"
    unknown = "unknown"  # a record of a run that left no status.json


class ContainerFacts(Frozen):
    """The container's identity as its runtime reported it before the start."""

    runtime: str = Field(description="podman | docker")
    runtime_version: str = Field(description="`<runtime> --version`, as printed")
    image: str = Field(description="the reference the recipe gave")
    image_digest: str | None = Field(None, description="the manifest digest (sha256:...)")
    image_id: str = Field(description="the image id (its config's digest)")
    image_created: str | None = Field(None, description="the image's created time")
    name: str = Field(description="the container's name")


class LauncherFacts(Frozen):
    """A launcher script: what ran, what it printed about itself, how it ended."""

    path: str
    sha256: str
    argv: list[str] = Field(description="as run (never through a shell)")
    settings: dict[str, str] = Field(
        default_factory=dict, description="the `key=value` lines it printed before "
        "`--- server ---` (its declared settings)")
    exit_code: int | None = None


class Accelerator(Frozen):
    """One device as its vendor tool lists it (the whole host, whatever the run used)."""

    vendor: str
    index: int
    name: str = Field(description="the device model, e.g. NVIDIA H200")
    driver: str | None = None
    memory_mib: int | None = Field(None, description="total device memory")
    pci_address: str | None = Field(None, description="PCI address, 0000:03:00.0")
    pci_device_id: str | None = Field(None, description="PCI device id, 0xe223")
    link: str | None = Field(None, description="negotiated PCIe link, `2.5GT/s x1`")
    listed_name: str | None = Field(None, description="the name the tool listed, where "
                                                      "`name` is the model's one name")


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
