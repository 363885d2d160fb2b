"""Fixtures for tests that start the real vLLM CPU engine (`@pytest.mark.engine`).

- `tiny_models`: the tiny checkpoints of tools/tiny_checkpoint.py, built once per
  session into a temp dir (or kept in `$REGISTRY_TEST_MODELS`, for local speed).
- `cpu_run(name)`: runs `recipes/<name>.toml` once per session with `run_recipe` and
  returns its run directory (the result is shared: treat it as read-only). A lane
  that fails raises the same error for every test that asks for it.
- `home`: a home and a trusted key per test module; `run_cli`: the CLI, in-process.
- After every test in this folder, no engine this process started may survive.

Engine tests of other areas (resolver, seal, diff, contracts) live in this folder to
share these fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

RECIPES = ROOT / "recipes"


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = os.environ.get("REGISTRY_TEST_MODELS")
    out = Path(kept) if kept else tmp_path_factory.mktemp("models")
    # A subprocess keeps torch and transformers out of the test process.
    subprocess.run([sys.executable, str(ROOT / "tools" / "tiny_checkpoint.py"), "--out", str(out)],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def cpu_run(tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    from registry.executor.run import run_recipe

    base = tmp_path_factory.mktemp("cpu-runs")
    done: dict[str, Path | Exception] = {}

    def get(name: str) -> Path:
        if name not in done:
            try:
                run_recipe(RECIPES / f"{name}.toml", base / name, models_dir=tiny_models,
                           timeout=900, request_timeout=300)
                done[name] = base / name
            except Exception as e:  # remembered: a broken lane is not re-run per test
                done[name] = e
        result = done[name]
        if isinstance(result, Exception):
            raise result
        return result

    return get


@pytest.fixture(scope="module")
def home(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Path]:
    """A home and a trusted key for one test module (REGISTRY_HOME, REGISTRY_KEYS_DIR)."""
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    base = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    with pytest.MonkeyPatch.context() as env:
        env.delenv("REGISTRY_DATABASE_URL", raising=False)
        env.setenv("REGISTRY_KEYS_DIR", str(base / "keys"))
        env.setenv("REGISTRY_HASH_CACHE", str(base / "hashes.sqlite"))
        create_key(base / "keys")
        created = init_home(base / ".registry")
        genesis(created, signing_key(base / "keys"))
        env.setenv("REGISTRY_HOME", str(created.root))
        yield base


def run_cli(*args: str | Path) -> tuple[int, dict[str, Any], str]:
    """`registry ARGS --json` in-process: exit code, the parsed JSON, stderr."""
    from typer.testing import CliRunner

    from registry.cli import app

    r = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    return r.exit_code, json.loads(r.stdout) if r.stdout.strip() else {}, r.stderr


@pytest.fixture(autouse=True)
def no_engine_survives() -> Iterator[None]:
    from registry.executor import engine

    before = len(engine.STARTED)
    yield
    left = {sid: pids for sid in engine.STARTED[before:] if (pids := engine.session_pids(sid))}
    assert not left, f"engine processes survived the test: {left}"
