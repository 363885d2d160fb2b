"""Containers and launchers without an engine: the recipe's [engine.container] and
launcher, the plan's argv, and the lab's real compose packet (tests/data/lab-packets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.executor.plan import plan
from registry.recipe import load_recipe
from registry.recipe.packet import check_packet, size_bytes
from tests.conftest import ROOT

PACKETS = ROOT / "tests" / "data" / "lab-packets"
DIGEST = "sha256:" + "ab" * 32


def _recipe(tmp_path: Path, extra: str) -> Path:
    text = (ROOT / "recipes" / "tiny-llamacpp-f16-kv.toml").read_text()
    text = text.replace('path = "suites/', f'path = "{ROOT}/recipes/suites/')
    path = tmp_path / "r.toml"
    path.write_text(text.replace("[engine.args]", extra + "\n[engine.args]"))
    return path


def test_a_real_lab_packet_passes_every_rule_of_the_lab_s_checker() -> None:
    """qwen35-9b-w4a16-b70, byte for byte: both profiles, differing only in device
    selection and tensor parallel size; the one finding is the host rule the lab's
    checker lacks (every lab packet writes mem_limit 12g, memswap_limit 20g)."""
    result = check_packet(PACKETS / "qwen35-9b-w4a16-b70")
    assert result.services == ["one-gpu", "two-gpu"] and result.lab_ok and not result.ok
    assert [(f.source, f.rule, f.service) for f in result.findings] == [
        ("host", "swap", "one-gpu"), ("host", "swap", "two-gpu")]
    assert "memswap_limit 20g is not mem_limit 12g: the engine may swap 8 GiB" in \
        result.findings[0].message


def test_the_lab_s_two_card_packet_is_flagged_for_swap_above_memory() -> None:
    """Its package.json (not kept: 80 kB) lists two-gpu alone; without it the lab's
    rule wants both profiles."""
    result = check_packet(PACKETS / "qwen38-27b-fp8-tp2-b70", profiles=("two-gpu",))
    assert result.services == ["two-gpu"] and result.lab_ok and not result.ok
    assert [(f.rule, f.service) for f in result.findings] == [("swap", "two-gpu")]
    alone = check_packet(PACKETS / "qwen38-27b-fp8-tp2-b70")
    assert [(f.source, f.rule) for f in alone.findings] == [("lab", "profiles"),
                                                          ("host", "swap")]
    assert "compose.yaml has no one-gpu service" in alone.findings[0].message


def test_a_packet_whose_profiles_drift_apart_is_flagged(tmp_path: Path) -> None:
    text = (PACKETS / "qwen35-9b-w4a16-b70" / "compose.yaml").read_text()
    one, two = text.split("  two-gpu:\n")
    drifted = one + "  two-gpu:\n" + two.replace('"0.95"', '"0.90"').replace(
        'FI_TCP_IFACE: "lo"', 'FI_TCP_IFACE: "eth0"')
    (tmp_path / "compose.yaml").write_text(drifted)
    found = [f.message for f in check_packet(tmp_path).findings if f.source == "lab"]
    assert found == ["the two profiles should differ only in device selection, but differ "
                     "in ['FI_TCP_IFACE', 'ONEAPI_DEVICE_SELECTOR', 'ZE_AFFINITY_MASK']",
                     "serving arguments differ beyond tensor parallel size"]


def test_the_same_packet_with_swap_equal_to_memory_passes() -> None:
    result = check_packet(PACKETS / "qwen38-27b-fp8-tp2-b70-noswap", profiles=("two-gpu",))
    assert result.ok, result.findings


def test_a_packet_that_contradicts_its_recipe_is_a_mismatch(tmp_path: Path) -> None:
    image = ("ghcr.io/steveseguin/vllm-openai-xpu-qwen38-int4@sha256:"
             "7cd7bb16b1fd2e679f0230a38b2f0242fe1c278853867e697c0ce139be2133d2")
    same = load_recipe(_recipe(tmp_path, f'[engine.container]\nimage = "{image}"\n'
                                         'memory = "12g"\nmemory_swap = "12g"\n'))
    assert check_packet(PACKETS / "qwen38-27b-fp8-tp2-b70-noswap", same,
                        profiles=("two-gpu",)).ok
    other = load_recipe(_recipe(tmp_path, f'[engine.container]\nimage = "x/y@{DIGEST}"\n'
                                          'memory = "8g"\nmemory_swap = "8g"\n'))
    found = check_packet(PACKETS / "qwen38-27b-fp8-tp2-b70-noswap", other,
                         profiles=("two-gpu",)).findings
    assert [f.rule for f in found] == ["recipe"] * 3
    assert "the recipe's 'x/y@" in found[0].message


def test_sizes_read_as_compose_writes_them() -> None:
    assert size_bytes("12g") == 12 * 1024**3 == size_bytes("12G")
    assert size_bytes("512m") == 512 * 1024**2 and size_bytes("twelve") is None


@pytest.mark.parametrize("bad, message", [
    ('image = "x/y@sha256:123"', "a digest is `@sha256:` and 64"),
    ('image = "x/y; rm -rf /"', "is not an image reference"),
    (f'image = "x/y@{DIGEST}"\nmounts = ["/a"]', "write HOST:CONTAINER"),
    (f'image = "x/y@{DIGEST}"\nmemory = "2g"', "memory and memory_swap go together"),
    (f'image = "x/y@{DIGEST}"\nruntime = "lxc"', "'podman' or 'docker'"),
])
def test_a_bad_container_table_is_refused(tmp_path: Path, bad: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=r"engine\.container") as e:
        load_recipe(_recipe(tmp_path, f"[engine.container]\n{bad}\n"))
    assert message in str(e.value) + (e.value.hint or "")


def test_the_container_plan_runs_the_engine_as_the_image_s_command(tmp_path: Path) -> None:
    recipe = load_recipe(_recipe(tmp_path, (
        f'[engine.container]\nimage = "x/y@{DIGEST}"\noci_runtime = "/usr/sbin/runc"\n'
        'memory = "2g"\nmemory_swap = "2g"\nulimits = { nofile = "1024:1024" }\n'
        'env = { GGML_X = "1" }\n')))
    launch = plan(recipe, port=18131, models_dir=Path("/models"), cwd=tmp_path,
                  cache_root=tmp_path / "cache-abc")
    argv = launch.argv
    assert argv[:2] == ["podman", "run"] and "--rm" in argv
    assert argv[argv.index("--runtime") + 1] == "/usr/sbin/runc"
    assert "--network=host" in argv and argv[argv.index("--memory-swap") + 1] == "2g"
    assert argv[argv.index("--volume") + 1] == ("/models/tiny-llama-q8_0.gguf:"
                                                "/models/tiny-llama-q8_0.gguf:ro")
    image = argv.index(f"x/y@{DIGEST}")
    assert argv[image + 1] == "llama-server" and argv[image + 2:].count("--port") == 1
    # values never on the runtime's command line: names only, the values in its env
    assert argv[argv.index("--env", argv.index("GGML_X") - 1) + 1] == "GGML_X"
    assert launch.env["GGML_X"] == "1" and "GGML_X=1" not in argv
    assert launch.container and launch.container.pinned


def test_a_launcher_runs_the_engine_s_argv_after_its_own(tmp_path: Path) -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-llamacpp-launcher.toml")
    launch = plan(recipe, port=18131, models_dir=Path("/models"), cwd=tmp_path,
                  cache_root=tmp_path / "c", recipe_dir=ROOT / "recipes",
                  environ={"REGISTRY_LLAMA_SERVER": "/bin/true"})
    script = str((ROOT / "recipes" / "launchers" / "llama-server.sh").resolve())
    assert launch.argv[:4] == [script, "--label=tiny", "--", "/bin/true"]
    assert launch.launcher == script and launch.env["CTX_SIZE"] == "8192"


def test_a_launcher_that_is_missing_is_refused_before_the_run(tmp_path: Path) -> None:
    path = _recipe(tmp_path, "")
    path.write_text(path.read_text().replace('version = "11434"',
                                             'version = "11434"\nlauncher = "nope.sh"'))
    with pytest.raises(InvalidInput, match=r"engine\.launcher: .*nope\.sh is not a file"):
        plan(load_recipe(path), port=1, models_dir=Path("/m"), cwd=tmp_path,
             cache_root=tmp_path, recipe_dir=tmp_path)


def test_the_launcher_s_forwarded_env_is_read_outside_if_blocks(tmp_path: Path) -> None:
    from registry.recipe.packet import forwarded_env

    launcher = tmp_path / "run.sh"
    launcher.write_text('docker run --env FI_PROVIDER=tcp \\\n  --env "ZE_AFFINITY_MASK=$M"\n'
                        'if [ -n "$X" ]; then\n  args+=(--env X_ONLY="$X")\nfi\n'
                        'if [ -n "$Y" ]; then args+=(--env Y_ONLY=1); fi\n'
                        '  --env PYTHONHASHSEED=0  # after a one-line guard\n')
    assert forwarded_env(launcher) == {"FI_PROVIDER", "ZE_AFFINITY_MASK", "PYTHONHASHSEED"}
    result = check_packet(PACKETS / "qwen38-27b-fp8-tp2-b70-noswap",
                          launcher_env={"FI_PROVIDER", "NOT_IN_THE_PACKET", "IMAGE"},
                          profiles=("two-gpu",))
    assert [f.rule for f in result.findings] == ["launcher-env"]
    assert "NOT_IN_THE_PACKET" in result.findings[0].message


@pytest.mark.parametrize("runtime, platform, want", [
    ("podman", "xpu", ["--device", "/dev/dri", "--group-add", "render"]),
    ("docker", "cuda", ["--gpus", "all"]),
    ("podman", "cuda", ["--device", "nvidia.com/gpu=all"]),
])
def test_a_platform_s_devices_reach_the_container(runtime: str, platform: str,
                                                  want: list[str]) -> None:
    from registry.executor.container import container_argv
    from registry.recipe.schema import ContainerSpec

    spec = ContainerSpec(image=f"x/y@{DIGEST}", runtime=runtime)  # type: ignore[arg-type]
    argv = container_argv(spec, ["vllm"], name="n", port=1, env={}, model=None, mounts=[],
                          platform=platform)
    joined = " ".join(argv)
    assert " ".join(want) in joined
    assert "/dev/dri" not in " ".join(container_argv(spec, ["vllm"], name="n", port=1, env={},
                                                     model=None, mounts=[]))
