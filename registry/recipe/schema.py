"""Recipe schema v1: what to run and how to measure it.

Weight precision and KV-cache precision are separate fields on purpose: a KV
precision is never inferred from a weight precision (a checkpoint with FP8 weights
can run a BF16 cache, and a BF16 checkpoint can silently run an FP8 cache).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from registry.base.model import Frozen
from registry.engines.plugin import engine_for, plugins, unnamed
from registry.formats.rundir import EngineStop

SCHEMA = "registry.recipe/v1"
COMMIT_RE = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})$")
NAME_RE = r"^[a-z0-9][a-z0-9._-]*$"


class KVCacheDtype(StrEnum):
    """A concrete KV-cache storage format, or `checkpoint` (what its kv_cache_scheme asks)."""

    bfloat16 = "bfloat16"
    float16 = "float16"
    float32 = "float32"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"
    fp8_inc = "fp8_inc"
    fp8_ds_mla = "fp8_ds_mla"
    nvfp4 = "nvfp4"
    checkpoint = "checkpoint"


class GGMLCacheType(StrEnum):
    """A llama.cpp KV cache type (`--cache-type-k` / `--cache-type-v`), ggml's own names."""

    f32 = "f32"
    f16 = "f16"
    bf16 = "bf16"
    q8_0 = "q8_0"
    q4_0 = "q4_0"
    q4_1 = "q4_1"
    iq4_nl = "iq4_nl"
    q5_0 = "q5_0"
    q5_1 = "q5_1"


class DraftKVCacheDtype(StrEnum):
    """The draft's cache: follow the target's effective cache, or its own format."""

    target = "target"
    bfloat16 = "bfloat16"
    float16 = "float16"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"


class Activations(StrEnum):
    bfloat16 = "bfloat16"
    float16 = "float16"
    float32 = "float32"


class Platform(StrEnum):
    cpu = "cpu"
    cuda = "cuda"
    xpu = "xpu"


class ContractName(StrEnum):
    bitwise_teacher = "bitwise-teacher"
    self_consistency = "self-consistency"
    semantic_gates = "semantic-gates"
    none = "none"


class MetricFormula(StrEnum):
    """Decode-rate formulas; each record names the one it used."""

    intervals_99 = "99 / (t[99] - t[0])"
    legacy_100 = "100 / (t[99] - t[0])"


def _pin(value: str | None, what: str) -> str | None:
    if value is not None and not COMMIT_RE.match(value):
        raise ValueError(
            f"{what} claims a pin but {value!r} is not a full commit hash "
            "(40 or 64 lowercase hex digits); use the full hash, or omit it"
        )
    return value


class ModelSpec(Frozen):
    """The target checkpoint."""

    path: str | None = Field(None, description="local path (may use ${VAR}) or hub id")
    hub_id: str | None = Field(None, description="the hub repository this checkpoint came from")
    revision: str | None = Field(None, description="pinned hub commit (full hash)")
    manifest_sha256: str | None = Field(None, description="digest of the release-file manifest")
    identity: str | None = Field(None, description="reference into identities/, e.g. checkpoints/x")

    @field_validator("revision")
    @classmethod
    def _revision_is_pin(cls, v: str | None) -> str | None:
        return _pin(v, "revision")

    @model_validator(mode="after")
    def _has_a_location(self) -> ModelSpec:
        if not (self.path or self.hub_id or self.identity):
            raise ValueError("needs `path`, `hub_id` or `identity`")
        return self


class DraftSpec(ModelSpec):
    """A speculative-decoding draft: a model (dflash, eagle, ...) or a model-free method."""

    path: str | None = None
    method: str = Field(description="vLLM speculative method: dflash, eagle3, ngram, ...")
    num_speculative_tokens: int = Field(ge=1, description="draft depth per cycle")
    config: dict[str, Any] = Field(
        default_factory=dict, description="further speculative_config keys, under vLLM's names"
    )

    @model_validator(mode="after")
    def _has_a_location(self) -> DraftSpec:
        return self  # ngram and suffix drafts have no model


class PrecisionSpec(Frozen):
    """Each precision axis on its own; none is inferred from another."""

    weights: str = Field(description="target weight format, e.g. bfloat16, int4-w4a16, fp8")
    draft_weights: str | None = Field(None, description="draft weight format (what runs)")
    activations: Activations | None = Field(None, description="activation / model dtype")
    kv_cache: KVCacheDtype | GGMLCacheType | None = Field(
        None, description="target KV-cache storage format, or `checkpoint`; llama.cpp: K and V")
    kv_cache_k: GGMLCacheType | None = Field(None, description="llama.cpp: the K cache type")
    kv_cache_v: GGMLCacheType | None = Field(None, description="llama.cpp: the V cache type")
    draft_kv_cache: DraftKVCacheDtype | None = Field(
        None, description="draft KV-cache format; `target` follows the target's effective cache"
    )

    @field_validator("weights", "draft_weights")
    @classmethod
    def _token(cls, v: str | None) -> str | None:
        # llama.cpp's file types are upper case (Q8_0, Q4_K_M, BF16)
        if v is not None and not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", v):
            raise ValueError(f"{v!r} is not a precision token (e.g. int4-w4a16, Q4_K_M)")
        return v

    def kv_label(self) -> str | None:
        """The KV precision as one value (`precision.kv_cache`): vLLM's format; llama.cpp's
        type when K and V agree, else `K/V` (q8_0/f16)."""
        if self.kv_cache is not None:
            return self.kv_cache.value
        if self.kv_cache_k and self.kv_cache_v:
            return f"{self.kv_cache_k.value}/{self.kv_cache_v.value}"
        return None

    @field_validator("kv_cache", mode="before")
    @classmethod
    def _no_aliases(cls, v: Any) -> Any:
        hints = {
            "auto": "`auto` is not a dtype: write the format you expect, or `checkpoint`",
            "fp8": "write `fp8_e4m3` (what vLLM's `fp8` means) so the format is explicit",
        }
        if v in hints:
            raise ValueError(hints[v])
        return v


class ParallelSpec(Frozen):
    tensor: int = Field(1, ge=1)
    pipeline: int = Field(1, ge=1)
    data: int = Field(1, ge=1)
    expert: int = Field(1, ge=1, description="expert-parallel size: 1 (off) or tensor x data")

    @model_validator(mode="after")
    def _expert_matches_vllm(self) -> ParallelSpec:
        if self.expert not in (1, self.tensor * self.data):
            raise ValueError(
                f"expert = {self.expert}: vLLM's expert-parallel size is tensor x data "
                f"= {self.tensor * self.data} when enabled; use 1 or {self.tensor * self.data}"
            )
        return self

    @property
    def world_size(self) -> int:
        return self.tensor * self.pipeline * self.data


DIGEST_RE = re.compile(r"@sha256:[0-9a-f]{64}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SIZE_RE = r"^[1-9][0-9]*[kmg]?$"


class ContainerSpec(Frozen):
    """The engine runs in a container (docs/containers.md): the image by digest, the
    runtime, what it mounts and may reach, its memory."""

    image: str = Field(description="`repo@sha256:<digest>` (a tag alone is refused for sealing)")
    runtime: Literal["podman", "docker"] = "podman"
    oci_runtime: str | None = Field(
        None, description="the OCI runtime podman/docker is told to use (`--runtime`), "
        "e.g. /usr/sbin/runc")
    mounts: list[str] = Field(
        default_factory=list, description="extra `HOST:CONTAINER[:ro]` mounts (may use ${VAR}); "
        "the model is always mounted read-only at its own path")
    network: Literal["host", "loopback"] = Field(
        "host", description="`host`: the host's network, the server on 127.0.0.1; `loopback`: "
        "its own network, the port published on 127.0.0.1 only")
    env: dict[str, str] = Field(default_factory=dict, description="container environment")
    devices: list[str] = Field(default_factory=list,
                               description="devices passed in, e.g. /dev/dri (XPU)")
    gpus: str | None = Field(None, description="NVIDIA GPUs (`all`, `device=0,1`): CUDA")
    group_add: list[str] = Field(default_factory=list, description="e.g. render (XPU)")
    memory: str | None = Field(None, pattern=SIZE_RE, description="memory limit, e.g. 12g")
    memory_swap: str | None = Field(
        None, pattern=SIZE_RE, description="memory plus swap; equal to memory: no swap")
    ulimits: dict[str, str] = Field(
        default_factory=dict, description="e.g. nofile = \"1024:1024\" (where the runtime's "
        "defaults exceed the host's)")

    @field_validator("image")
    @classmethod
    def _image_word(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$", v) or len(v) > 512:
            raise ValueError(f"{v!r} is not an image reference (repo[:tag][@sha256:digest])")
        if "@" in v and not DIGEST_RE.search(v):
            raise ValueError(f"{v!r}: a digest is `@sha256:` and 64 lowercase hex digits")
        return v

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: dict[str, str]) -> dict[str, str]:
        bad = sorted(k for k in v if not ENV_NAME_RE.match(k))
        if bad:
            raise ValueError(f"{bad[0]!r} is not an environment variable name")
        return v

    @field_validator("mounts")
    @classmethod
    def _mount_shape(cls, v: list[str]) -> list[str]:
        for mount in v:
            parts = mount.split(":")
            if len(parts) not in (2, 3) or not all(parts[:2]) or \
                    (len(parts) == 3 and parts[2] not in ("ro", "rw")):
                raise ValueError(f"mount {mount!r}: write HOST:CONTAINER or HOST:CONTAINER:ro")
        return v

    @model_validator(mode="after")
    def _swap_not_below_memory(self) -> ContainerSpec:
        if (self.memory_swap is None) != (self.memory is None):
            raise ValueError("memory and memory_swap go together (equal: no swap)")
        return self

    @property
    def pinned(self) -> bool:
        """The image is named by its digest (a tag can move; a digest cannot)."""
        return bool(DIGEST_RE.search(self.image))


class EngineSpec(Frozen):
    name: str = Field(default_factory=lambda: unnamed().name,
                      description="the engine: a folder of registry/engines/ (none named: vLLM, "
                                  "the registry's first)")
    version: str | None = Field(None, description="engine release the recipe was written for")
    commit: str | None = Field(None, description="pinned engine source commit (full hash)")
    source: str | None = Field(None, description="engine source tree (may use ${VAR})")
    python: str | None = Field(
        None, description="the interpreter of the engine's environment (may use ${VAR}, ~); "
        "$REGISTRY_ENGINE_PYTHON overrides it, the user's config file is the default")
    args: dict[str, Any] = Field(
        default_factory=dict, description="`vllm serve` arguments under their snake_case names"
    )
    custom_args: list[str] = Field(
        default_factory=list, description="arguments a patched engine adds beyond stock vLLM"
    )
    env: dict[str, str] = Field(default_factory=dict, description="engine environment")
    identity: str | None = None
    launcher: str | None = Field(
        None, description="a launcher script that starts the engine (relative to the recipe's "
        "folder, or ${VAR}); run as an argv with the engine's arguments after its own")
    launcher_args: list[str] = Field(
        default_factory=list, description="the launcher's own arguments, before the engine's")
    stop: EngineStop | None = Field(
        None, description="how the launcher's engine is stopped: its package's stop command, "
        "a signal, graces, whether SIGKILL may follow (docs/containers.md)")
    container: ContainerSpec | None = Field(None, description="run the engine in a container")

    @model_validator(mode="after")
    def _launcher_or_container(self) -> EngineSpec:
        if self.launcher_args and not self.launcher:
            raise ValueError("launcher_args without a launcher")
        if self.stop and not self.launcher:
            raise ValueError("stop without a launcher (a container stops through its "
                             "runtime; a plain engine by the host's policy)")
        if self.launcher and self.container:
            raise ValueError("a launcher and a container: choose one (a launcher that runs "
                             "its own container is named as a launcher)")
        return self

    @field_validator("name")
    @classmethod
    def _a_known_engine(cls, v: str) -> str:
        known = plugins()
        if v not in known:
            raise ValueError(f"{v!r}: no such engine (engines: {', '.join(sorted(known))})")
        return v

    @field_validator("commit")
    @classmethod
    def _commit_is_pin(cls, v: str | None) -> str | None:
        return _pin(v, "commit")


class HardwareSpec(Frozen):
    platform: Platform
    device: str | None = Field(None, description="device model, e.g. Intel Arc Pro B70")
    count: int = Field(1, ge=1)
    identity: str | None = None


class SuiteSpec(Frozen):
    """A prompt suite: JSONL with one `{"id", "prompt"}` object per line."""

    name: str = Field(pattern=NAME_RE)
    path: str | None = Field(None, description="relative to the recipe file, or ${VAR}")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    prompts: int | None = Field(None, ge=1, description="expected prompt count")
    max_tokens: int | None = Field(None, ge=1, description="overrides benchmark.max_tokens")
    context_tokens: int | None = Field(None, ge=1, description="nominal prompt length")
    identity: str | None = None


class BenchmarkSpec(Frozen):
    api: Literal["completions", "chat"] = "completions"
    suites: list[SuiteSpec] = Field(min_length=1)
    max_tokens: int = Field(512, ge=1)
    concurrency: int = Field(1, ge=1)
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 1
    metric: MetricFormula = MetricFormula.intervals_99
    window: int = Field(100, ge=2, description="output tokens in the decode-rate window")
    allow_prefix_reuse: bool = Field(False, description="accept cached_tokens > 0")
    request_extra: dict[str, Any] = Field(default_factory=dict, description="extra request keys")

    @model_validator(mode="after")
    def _unique_suites(self) -> BenchmarkSpec:
        names = [s.name for s in self.suites]
        if len(names) != len(set(names)):
            raise ValueError(f"suite names must be unique, got {names}")
        return self


class JsonSchemaGate(Frozen):
    kind: Literal["json-schema"]
    prompts: list[str] = Field(min_length=1)
    json_schema: dict[str, Any] = Field(alias="schema")

    @field_validator("json_schema")
    @classmethod
    def _is_a_json_schema(cls, v: dict[str, Any]) -> dict[str, Any]:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
        from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]

        try:
            Draft202012Validator.check_schema(v)
        except SchemaError as e:
            raise ValueError(f"not a valid JSON schema (draft 2020-12): {e.message}") from None
        return v


class FragmentsGate(Frozen):
    kind: Literal["fragments"]
    prompts: list[str] = Field(min_length=1)
    required: list[str] = Field(default_factory=list)
    forbidden: list[str] = Field(default_factory=list)


class RepetitionGate(Frozen):
    kind: Literal["no-repetition"]
    prompts: list[str] = Field(default_factory=lambda: ["*"])
    ngram: int = Field(16, ge=1, description="token n-gram length (see docs/contracts.md)")
    max_repeats: int = Field(4, ge=1, description="most times one n-gram may recur")


class NeedleGate(Frozen):
    kind: Literal["needle"]
    prompts: list[str] = Field(min_length=1)
    needle: str
    context_tokens: int | None = None


class CodeGate(Frozen):
    """The lab's code canary: the code in the answer, run in a sandbox
    (registry/contracts/sandbox.py), prints what is expected."""

    kind: Literal["code"]
    prompts: list[str] = Field(min_length=1)
    expected_stdout: str = Field(description="compared with the output, ends stripped")
    stdin: str = ""
    timeout_s: float = Field(5.0, gt=0, le=60, description="wall and CPU time")
    memory_mib: int = Field(256, ge=16, le=4096, description="address space")


class SameAnswerGate(Frozen):
    """The lab's determinism canary: one prompt sent several times (under several ids)
    gives one answer, token for token."""

    kind: Literal["same-answer"]
    prompts: list[str] = Field(min_length=2)


Gate = Annotated[
    JsonSchemaGate | FragmentsGate | RepetitionGate | NeedleGate | CodeGate | SameAnswerGate,
    Field(discriminator="kind")
]


class QualitySpec(Frozen):
    contract: ContractName
    teacher: str | None = Field(None, description="lane whose teacher is the reference")
    repeats: int = Field(2, ge=2, description="self-consistency: identical runs required")
    gates: list[Gate] = Field(default_factory=list)

    @model_validator(mode="after")
    def _gates_for_semantic(self) -> QualitySpec:
        if self.contract is ContractName.semantic_gates and not self.gates:
            raise ValueError("contract semantic-gates needs at least one [[quality.gates]]")
        return self


class Expect(Frozen):
    """A runtime marker the engine log must show: a flag is not proof that code ran."""

    name: str = Field(pattern=NAME_RE)
    pattern: str = Field(description="regular expression matched against each log message")
    count: int = Field(1, ge=0, description="matches expected (per rank when per_rank)")
    at_least: bool = Field(False, description="count is a minimum rather than exact")
    per_rank: bool = True
    ranks: int | None = Field(None, ge=1, description="ranks expected; default: world size")
    values: dict[str, str] = Field(
        default_factory=dict, description="named groups of the pattern and their expected values"
    )

    @model_validator(mode="after")
    def _pattern_compiles(self) -> Expect:
        try:
            compiled = re.compile(self.pattern)
        except re.error as e:
            raise ValueError(f"pattern does not compile: {e}") from None
        missing = set(self.values) - set(compiled.groupindex)
        if missing:
            raise ValueError(f"values name groups the pattern lacks: {sorted(missing)}")
        return self


class Recipe(Frozen):
    schema_: Literal["registry.recipe/v1"] = Field(alias="schema")
    name: str = Field(pattern=NAME_RE)
    lane: str = Field(pattern=NAME_RE)
    description: str = ""
    model: ModelSpec
    draft: DraftSpec | None = None
    precision: PrecisionSpec
    parallel: ParallelSpec = ParallelSpec()
    engine: EngineSpec = Field(default_factory=EngineSpec)  # built when used: plug-ins load late
    hardware: HardwareSpec
    benchmark: BenchmarkSpec
    quality: QualitySpec = QualitySpec(contract=ContractName.none)
    expect: list[Expect] = Field(default_factory=list)
    identities: dict[str, str] = Field(
        default_factory=dict, description="identity documents used, by reference -> sha256"
    )

    @model_validator(mode="after")
    def _kv_cache_in_the_engine_s_terms(self) -> Recipe:
        precision = engine_for(self.engine.name).check_precision(self.precision)
        return self if precision == self.precision else \
            self.model_copy(update={"precision": precision})

