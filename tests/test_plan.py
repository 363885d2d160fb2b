"""The launch plan is a pure function of recipe + platform profile (no engine needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.executor.plan import plan
from registry.executor.profiles import PROFILES
from registry.recipe import load_recipe
from registry.recipe.schema import Platform
from tests.conftest import ROOT

MODELS = Path("/models")
CACHE = Path("/cache")
CWD = Path("/lab")


def _plan(name: str, **kwargs):
    recipe = load_recipe(ROOT / "recipes" / f"{name}.toml")
    return plan(recipe, port=8123, models_dir=MODELS, cwd=CWD, cache_root=CACHE, environ={},
                **kwargs)


def test_tiny_bf16_argv_is_the_recipe_on_the_cpu_entry_point() -> None:
    launch = _plan("tiny-bf16-kv")
    assert launch.platform == "cpu"
    assert launch.argv == [
        "python", "-m", "vllm.entrypoints.launchers.api_server.entry",
        "--data-parallel-size", "1", "--dtype", "bfloat16", "--no-enable-prefix-caching",
        "--enable-prompt-tokens-details", "--gpu-memory-utilization", "0.2",
        "--kv-cache-dtype", "bfloat16", "--max-model-len", "1024", "--max-num-seqs", "1",
        "--model", "/models/tiny-llama", "--pipeline-parallel-size", "1",
        "--tensor-parallel-size", "1", "--host", "127.0.0.1", "--port", "8123",
    ]
    assert (launch.cwd, launch.host, launch.port) == ("/lab", "127.0.0.1", 8123)


def test_every_cache_is_private_and_offline() -> None:
    launch = _plan("tiny-bf16-kv")
    assert launch.cache_dirs["VLLM_CACHE_ROOT"] == "/cache/vllm_cache_root"
    for var in ("VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "HF_HOME",
                "XDG_CACHE_HOME"):
        assert launch.env[var] == launch.cache_dirs[var]
        assert launch.env[var].startswith("/cache/")
    assert launch.env["HF_HUB_OFFLINE"] == "1"


def test_laguna_exact_on_xpu_golden_argv_and_env() -> None:
    launch = _plan("laguna-s21-b70-exact-short-decode")
    assert launch.platform == "xpu"
    assert launch.argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]
    args = launch.argv[3:]
    assert args[args.index("--model") + 1] == "/models/laguna-s-2.1/int4"
    assert args[args.index("--kv-cache-dtype") + 1] == "bfloat16"
    assert args[args.index("--tensor-parallel-size") + 1] == "4"
    assert "--enable-expert-parallel" in args
    spec = json.loads(args[args.index("--speculative-config") + 1])
    assert spec == {"method": "dflash", "model": "/models/laguna-s-2.1/dflash-int4",
                    "num_speculative_tokens": 11, "draft_sample_method": "greedy",
                    "rejection_sample_method": "standard", "use_local_argmax_reduction": False,
                    "revision": "5e07c246915c86dc6920fead03d019989224f2ba"}
    compilation = json.loads(args[args.index("--compilation-config") + 1])
    assert compilation["cudagraph_capture_sizes"] == [12]
    assert args[-4:] == ["--host", "127.0.0.1", "--port", "8123"]
    env = launch.env
    assert env["ZE_AFFINITY_MASK"] == "0,1,2,3"
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert env["CCL_ATL_TRANSPORT"] == "ofi"
    assert env["SYCL_CACHE_DIR"] == "/cache/sycl_cache_dir"
    assert env["VLLM_XPU_LAGUNA_EXACT_MAX_M"] == "12"  # the recipe's own variables ride along


def test_plan_is_deterministic() -> None:
    assert _plan("laguna-s21-b70-long-context-service") == _plan(
        "laguna-s21-b70-long-context-service")


def test_device_mask_follows_the_device_count() -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    two = recipe.model_copy(update={"hardware": recipe.hardware.model_copy(
        update={"platform": Platform.xpu, "count": 2})})
    launch = plan(two, port=1, models_dir=MODELS, cwd=CWD, cache_root=CACHE, environ={})
    assert launch.env["ZE_AFFINITY_MASK"] == "0,1"


def test_device_mask_takes_the_callers_devices() -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    cuda = PROFILES[Platform.cuda]
    one = plan(recipe, cuda, port=1, models_dir=MODELS, cwd=CWD, cache_root=CACHE,
               environ={"CUDA_VISIBLE_DEVICES": " 3, 1"})
    assert one.env["CUDA_VISIBLE_DEVICES"] == "3"  # the first of the caller's own devices
    two = recipe.model_copy(update={"hardware": recipe.hardware.model_copy(update={"count": 2})})
    with pytest.raises(InvalidInput, match=r"hardware\.count is 2 but "
                                           r"CUDA_VISIBLE_DEVICES=1 lists 1"):
        plan(two, cuda, port=1, models_dir=MODELS, cwd=CWD, cache_root=CACHE,
             environ={"CUDA_VISIBLE_DEVICES": "1"})


def test_platform_override() -> None:
    launch = _plan("tiny-bf16-kv", platform=PROFILES[Platform.cuda])
    assert launch.platform == "cuda" and launch.argv[:2] == ["python", "-m"]
    assert launch.env["CUDA_VISIBLE_DEVICES"] == "0"


@pytest.mark.parametrize("version, module", [
    ("0.25.0", "vllm.entrypoints.openai.api_server"),  # the CUDA kit's release
    ("0.31.2", "vllm.entrypoints.openai.api_server"),
    ("0.32.0", "vllm.entrypoints.launchers.api_server.entry"),  # the old module warns here
    ("0.32.0+cpu", "vllm.entrypoints.launchers.api_server.entry"),
    ("1.2.0rc1", "vllm.entrypoints.launchers.api_server.entry"),
    (None, "vllm.entrypoints.openai.api_server"),  # every release has it
    ("main", "vllm.entrypoints.openai.api_server"),
])
def test_one_start_command_per_release_on_every_platform(version, module) -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    recipe = recipe.model_copy(update={"engine": recipe.engine.model_copy(
        update={"version": version})})
    for platform in Platform:
        launch = plan(recipe, PROFILES[platform], port=1, models_dir=MODELS, cwd=CWD,
                      cache_root=CACHE, environ={})
        assert launch.argv[:3] == ["python", "-m", module]
        # the module's own convention: the model as an option, never positional
        assert launch.argv[launch.argv.index("--model") + 1] == "/models/tiny-llama"


@pytest.mark.parametrize("platform", list(Platform))
def test_stats_interval_is_set_on_every_platform(platform) -> None:
    launch = _plan("tiny-bf16-kv", platform=PROFILES[platform])
    assert launch.env["VLLM_LOG_STATS_INTERVAL"] == "1"  # else kv_usage_peak stays empty


def test_an_engine_in_a_folder_is_found_through_pythonpath() -> None:
    from registry.executor.engine import base_env

    environ = {"PYTHONPATH": "/opt/site", "NCCL_NVLS_ENABLE": "0", "SECRET_TOKEN": "x",
               "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    for platform in Platform:
        assert base_env(platform.value, environ)["PYTHONPATH"] == "/opt/site"
        assert "SECRET_TOKEN" not in base_env(platform.value, environ)
    cuda = base_env("cuda", environ)  # NVLink multicast stays off on a shared host
    assert cuda["NCCL_NVLS_ENABLE"] == "0" and cuda["NVSHMEM_DISABLE_NVLS"] == "1"
    assert cuda["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"


def test_models_var_from_the_environment_when_no_models_dir() -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    launch = plan(recipe, port=1, models_dir=None, cwd=CWD, cache_root=CACHE,
                  environ={"REGISTRY_MODELS": "/elsewhere"})
    assert "/elsewhere/tiny-llama" in launch.argv


def test_unset_variable_is_a_clear_error() -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    unset = r"engine\.args\.model: \$\{REGISTRY_MODELS\} is not set"
    with pytest.raises(InvalidInput, match=unset) as e:
        plan(recipe, port=1, models_dir=None, cwd=CWD, cache_root=CACHE, environ={})
    assert "--models" in (e.value.hint or "")


def test_a_recipe_may_not_redirect_the_private_caches() -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    bad = recipe.model_copy(update={"engine": recipe.engine.model_copy(
        update={"env": {"VLLM_CACHE_ROOT": "/shared/cache"}})})
    with pytest.raises(InvalidInput, match=r"engine\.env\.VLLM_CACHE_ROOT: the executor gives"):
        plan(bad, port=1, models_dir=MODELS, cwd=CWD, cache_root=CACHE, environ={})


def test_dry_run_prints_the_plan_without_an_engine(cli, tmp_path) -> None:
    r = cli("run", ROOT / "recipes" / "tiny-ngram.toml", "--dry-run", "--json",
            "--models", tmp_path, "--port", "9999")
    assert r.exit_code == 0, r.stderr
    launch = json.loads(r.stdout)
    assert launch["schema"] == "registry.launch/v1" and launch["port"] == 9999
    argv = launch["argv"]
    assert json.loads(argv[argv.index("--speculative-config") + 1])["method"] == "ngram"
    assert not any(tmp_path.iterdir())  # nothing written


def test_dry_run_human_output(cli, tmp_path) -> None:
    r = cli("run", ROOT / "recipes" / "tiny-bf16-kv.toml", "--dry-run", "--models", tmp_path)
    assert r.exit_code == 0, r.stderr
    assert "vllm.entrypoints.launchers.api_server.entry" in r.stdout
    assert "HF_HUB_OFFLINE" in r.stdout


def test_dry_run_unset_models_exit_code(cli, monkeypatch) -> None:
    monkeypatch.delenv("REGISTRY_MODELS", raising=False)
    r = cli("run", ROOT / "recipes" / "tiny-bf16-kv.toml", "--dry-run")
    assert r.exit_code == 4
    assert "REGISTRY_MODELS" in r.stderr and "Traceback" not in r.stderr
