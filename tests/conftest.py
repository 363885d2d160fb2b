"""Shared fixtures: the repository layout and a CLI runner that goes through the
same error handling as the installed `registry` command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli():
    """Run `registry ARGS...` in-process; returns exit code, stdout, stderr."""
    from registry.cli import app

    runner = CliRunner()

    def run(*args: str | Path) -> Result:
        r = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        return Result(r.exit_code, r.stdout, r.stderr)

    return run


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def hash_cache(tmp_path_factory, monkeypatch) -> Path:
    """A private hash cache for the test (never the user's ~/.cache)."""
    path = tmp_path_factory.mktemp("hash-cache") / "hashes.sqlite"
    monkeypatch.setenv("REGISTRY_HASH_CACHE", str(path))
    return path
