"""A package run again from its own files on the real vLLM CPU engine: the session's CPU
run of the tiny BF16-KV lane (`cpu_run`, shared with the other engine tests) sealed and
published, only the package folder copied to a fresh folder with a fresh key and home,
and `registry publish --rerun` launching it there (its `launch`: `registry run
recipe.toml`) and judging the new run against the package row by row. One engine start
of its own: the re-run.

(The captured run in tests/data/cpu-runs/ is not the original here: it was made from
another build of the tiny checkpoint, and a re-run of it produces other tokens for 7 of
its 8 prompts, which the verdict says.)"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from registry.cli import app
from tests.conftest import ROOT
from tests.engine.conftest import run_cli

pytestmark = pytest.mark.engine
RECIPE = ROOT / "recipes" / "tiny-bf16-kv.toml"


def test_a_package_alone_is_launched_and_judged_in_a_fresh_home(
        home: Path, tiny_models: Path, cpu_run: Callable[[str], Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from registry.seal import seal_run
    from registry.store.home import home_at

    run = shutil.copytree(cpu_run("tiny-bf16-kv"), tmp_path / "run")
    rid = seal_run(run, home=home_at(home / ".registry"), recipe_path=RECIPE).id
    code, _, stderr = run_cli("publish", rid[:12], "--out", tmp_path / "pkg", "--json")
    assert code == 0, stderr

    stranger = tmp_path / "stranger"
    shutil.copytree(tmp_path / "pkg", stranger / "pkg")
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(stranger / "keys"))
    assert run_cli("keys", "init", "--json")[0] == 0
    assert CliRunner().invoke(app, ["init", "--home", str(stranger / ".registry")]).exit_code == 0
    monkeypatch.setenv("REGISTRY_HOME", str(stranger / ".registry"))

    code, done, stderr = run_cli("publish", "--rerun", stranger / "pkg", "--models",
                                 tiny_models, "--json")
    assert done, stderr
    assert code == (0 if done["passed"] else 1), (stderr, done)
    assert done["launched"] and done["package"] == rid and done["record"] != rid
    rows = {r["name"]: r for r in done["rows"]}
    outputs = [r for name, r in rows.items() if name.endswith(" output")]
    # the same model, engine and recipe at temperature 0: the same tokens, prompt by prompt
    assert len(outputs) == 8 and all(r["verdict"] == "passed" for r in outputs), outputs
    assert rows["engine.version"]["verdict"] == "passed"
    assert rows["model.manifest_sha256"]["verdict"] == "passed"
    # speed: judged by both intervals when the run's rows were not degraded, else said
    figures = [r for name, r in rows.items() if name.startswith("tiny-cold/")
               and not name.endswith(" output")]
    assert figures and all(r["verdict"] in ("passed", "failed", "undecided", "not judged")
                           for r in figures)
    assert (stranger / "pkg" / "run" / "bench.json").is_file()
