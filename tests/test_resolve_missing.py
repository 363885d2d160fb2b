"""`registry resolve <missing path>` outside any home is a missing run directory (exit 4,
as docs/cli.md says), not "no registry home" (5): only a record id (hex) is looked up."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_a_missing_run_directory_exits_4_outside_a_home(cli, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REGISTRY_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    r = cli("resolve", tmp_path / "runs" / "gone")
    assert r.exit_code == 4, r.stderr
    assert "no such run directory" in r.stderr
    r = cli("resolve", "3f2a9c")  # a record prefix: that needs a home
    assert r.exit_code == 5 and "no registry home" in r.stderr
