"""A launcher's stop as its recipe says (`[engine.stop]`): the package's stop command,
then its signal to the launcher, each with its grace; SIGKILL only where both the recipe
and the host policy allow it; every step recorded. Real shell launchers, no engine."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.executor.engine import Engine, StopPolicy, free_port, session_pids
from registry.formats.rundir import EngineStop, LaunchPlan
from registry.recipe import load_recipe
from tests.conftest import ROOT

# Ignores SIGTERM, exits at SIGINT or once ./stop-now exists: a launcher whose package
# has its own stop (the lab's `docker stop -t 30 NAME` stands as `touch stop-now`).
LAUNCHER = """#!/usr/bin/env bash
trap '' TERM
trap 'echo got INT; exit 0' INT
echo "--- server ---"
while [ ! -e stop-now ]; do sleep 0.1; done
echo "stopped by its package"
"""
STUBBORN = "#!/usr/bin/env bash\ntrap '' TERM INT\nwhile true; do sleep 0.1; done\n"


def _engine(tmp_path: Path, script: str, stop: EngineStop | None,
            kill: bool = True) -> Engine:
    launcher = tmp_path / "run.sh"
    launcher.write_text(script)
    launcher.chmod(0o755)
    plan = LaunchPlan(platform="cpu", argv=[str(launcher)], env={}, cwd=str(tmp_path),
                      port=free_port(), launcher=str(launcher), stop=stop)
    engine = Engine(plan, tmp_path / "server.log")
    engine.policy = StopPolicy(grace_s=1, group_grace_s=0.5, kill=kill,
                               pid_dir=tmp_path / "pids")
    engine.start()
    time.sleep(0.3)  # its traps set
    return engine


def test_the_package_s_stop_command_runs_first(tmp_path: Path) -> None:
    engine = _engine(tmp_path, LAUNCHER, EngineStop(command=["touch", "stop-now"], grace_s=5))
    cleanup = engine.stop()
    assert cleanup.stopped_by == "stop command" and cleanup.clean and cleanup.exit_code == 0
    [step] = cleanup.steps
    assert (step.step, step.gone, step.detail) == ("stop command", True, "exit 0")
    assert "stopped by its package" in (tmp_path / "server.log").read_text()


def test_the_recipe_s_signal_goes_to_the_launcher(tmp_path: Path) -> None:
    engine = _engine(tmp_path, LAUNCHER, EngineStop(signal="SIGINT", grace_s=5))
    cleanup = engine.stop()
    assert cleanup.stopped_by == "SIGINT launcher" and cleanup.clean
    assert [s.step for s in cleanup.steps] == ["SIGINT launcher"]
    assert "got INT" in (tmp_path / "server.log").read_text()


def test_a_failing_stop_command_is_recorded_and_the_signal_follows(tmp_path: Path) -> None:
    engine = _engine(tmp_path, LAUNCHER, EngineStop(command=["false"], signal="SIGINT",
                                                    grace_s=1))
    cleanup = engine.stop()
    assert [(s.step, s.gone, s.detail) for s in cleanup.steps] == [
        ("stop command", False, "exit 1"), ("SIGINT launcher", True, None)]


@pytest.mark.parametrize("recipe_kill, host_kill", [(False, True), (True, False)])
def test_no_sigkill_unless_recipe_and_host_both_allow_it(tmp_path: Path, recipe_kill: bool,
                                                         host_kill: bool) -> None:
    engine = _engine(tmp_path, STUBBORN, EngineStop(grace_s=0.5, kill=recipe_kill),
                     kill=host_kill)
    assert engine.proc is not None
    pid = engine.proc.pid
    try:
        cleanup = engine.stop()
        assert cleanup.stopped_by == "left running" and cleanup.leftover_pids
        assert [s.step for s in cleanup.steps] == ["SIGTERM launcher", "TERM group"]
        assert (tmp_path / "pids" / f"engine-{pid}.json").is_file()  # for the next reaper
    finally:
        os.killpg(pid, signal.SIGKILL)
        engine.proc.wait()
    assert not session_pids(pid)


def test_both_allowing_it_the_group_is_killed_and_recorded(tmp_path: Path) -> None:
    engine = _engine(tmp_path, STUBBORN, EngineStop(grace_s=0.5, kill=True))
    cleanup = engine.stop()
    assert cleanup.stopped_by == "KILL group" and cleanup.clean
    assert [s.step for s in cleanup.steps] == ["SIGTERM launcher", "TERM group", "KILL group"]
    assert [s.at_s for s in cleanup.steps] == sorted(s.at_s for s in cleanup.steps)


def test_the_recipe_s_stop_reaches_the_plan_and_needs_a_launcher(tmp_path: Path) -> None:
    from registry.executor.plan import plan

    text = (ROOT / "recipes" / "tiny-llamacpp-launcher.toml").read_text().replace(
        'launcher_args = ["--label=tiny"]', 'launcher_args = ["--label=tiny"]\n'
        'stop = { command = ["kill-it", "${REGISTRY_MODELS}"], signal = "SIGINT", '
        'grace_s = 3 }')
    recipe = tmp_path / "r.toml"
    recipe.write_text(text)
    launch = plan(load_recipe(recipe), port=1, models_dir=Path("/m"), cwd=tmp_path,
                  cache_root=tmp_path, recipe_dir=ROOT / "recipes",
                  environ={"REGISTRY_LLAMA_SERVER": "/bin/true"})
    assert launch.stop == EngineStop(command=["kill-it", "/m"], signal="SIGINT", grace_s=3)
    plain = tmp_path / "plain.toml"
    plain.write_text(text.replace('launcher = "launchers/llama-server.sh"\n', "").replace(
        'launcher_args = ["--label=tiny"]\n', ""))
    with pytest.raises(InvalidInput, match="stop without a launcher"):
        load_recipe(plain)
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('signal = "SIGINT"', 'signal = "SIGKILL"'))
    with pytest.raises(InvalidInput, match=r"engine\.stop\.signal"):
        load_recipe(bad)
