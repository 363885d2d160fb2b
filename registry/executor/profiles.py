"""Platform profiles: the engine's environment on each kind of host.

One explicit table; the plan reads it and nothing else knows platform details. The
start command is the same on every platform: the interpreter's module entry point for
the recipe's engine release (registry/engines/vllm/args.py `server_command`).
"""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.recipe.schema import Platform


class PlatformProfile(Frozen):
    name: Platform
    command: list[str] | None = Field(
        None, description="a site's own start command, before the engine's arguments; "
        "default: the interpreter's module entry point for the recipe's engine release")
    env: dict[str, str] = Field(default_factory=dict, description="fixed engine variables")
    device_mask: str | None = Field(
        None, description="variable listing the visible devices, set from hardware.count")
    cache_vars: list[str] = Field(description="cache variables pointed at private, cold dirs")
    inherit: list[str] = Field(
        description="variables (or NAME* prefixes) passed on from the caller's environment")
    colocate_engine_core: bool = Field(
        False, description="once serving, pin the engine core onto its workers' CPUs "
        "(registry/executor/placement.py)")


# Caches every engine fills; each run gets its own empty copy so it starts cold.
COMMON_CACHES = ["VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR",
                 "HF_HOME", "XDG_CACHE_HOME", "TORCH_EXTENSIONS_DIR"]
# Unbuffered output: a killed engine's last lines still reach server.log. A 1 s stats
# interval: the default 10 s would print no periodic KV-usage or SpecDecoding line in a
# suite shorter than that, and `kv_usage_peak` would stay empty.
COMMON_ENV = {"PYTHONUNBUFFERED": "1", "VLLM_LOG_STATS_INTERVAL": "1"}
# PYTHONPATH: an engine installed into a folder (`pip install --target`) is found by the
# same interpreter the registry runs in.
BASE_INHERIT = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TZ", "TMPDIR",
                "LD_LIBRARY_PATH", "PYTHONPATH"]
# Switches a shared multi-GPU host may require (NVLink multicast off) reach the workers.
COLLECTIVE_INHERIT = ["NCCL_*", "TORCH_SYMM_MEM_*", "NVSHMEM_*"]

PROFILES: dict[Platform, PlatformProfile] = {
    Platform.cpu: PlatformProfile(
        name=Platform.cpu,
        env=COMMON_ENV,
        cache_vars=COMMON_CACHES,
        inherit=[*BASE_INHERIT, "LD_PRELOAD"],
        # The engine core's busy wait would otherwise starve the API server on the one
        # core the workers leave free: streams then arrive in bursts.
        colocate_engine_core=True,
    ),
    Platform.cuda: PlatformProfile(
        name=Platform.cuda,
        env=COMMON_ENV,
        device_mask="CUDA_VISIBLE_DEVICES",
        cache_vars=[*COMMON_CACHES, "CUDA_CACHE_PATH"],
        inherit=[*BASE_INHERIT, "CUDA_HOME", *COLLECTIVE_INHERIT],
    ),
    # Intel B70: devices by Level Zero mask, oneCCL over OFI, spawned workers (fork
    # after the XPU runtime is up hangs), and a private SYCL kernel cache.
    Platform.xpu: PlatformProfile(
        name=Platform.xpu,
        env={**COMMON_ENV, "VLLM_WORKER_MULTIPROC_METHOD": "spawn", "CCL_ATL_TRANSPORT": "ofi",
             "CCL_TOPO_P2P_ACCESS": "1", "TORCH_XCCL_ASYNC_ERROR_HANDLING": "1"},
        device_mask="ZE_AFFINITY_MASK",
        cache_vars=[*COMMON_CACHES, "SYCL_CACHE_DIR"],
        inherit=[*BASE_INHERIT, "ONEAPI_ROOT", "CMPLR_ROOT", "MKLROOT", "CCL_ROOT",
                 "I_MPI_ROOT", "FI_PROVIDER_PATH", "CCL_KVS_IFACE", "FI_TCP_IFACE",
                 "OCL_ICD_FILENAMES", "ZE_ENABLE_*"],
    ),
}


def profile_for(platform: Platform) -> PlatformProfile:
    return PROFILES[platform]
