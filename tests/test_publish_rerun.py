"""End to end from the package alone: a record published, only the package folder copied
to a fresh folder, a fresh registry home made there (`registry keys init`, `registry
init`), the package run again from its own recipe and commands and judged against its
own figures, row by row. Here the launch's run/ is the captured CPU run of the same
recipe (the path the other publish tests use); tests/engine/test_publish_engine.py
launches it on the real engine once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.test_publish import published, record, resign  # noqa: F401  (fixtures)

# the stranger's home has its own SQLite index; the original's kind does not matter here
pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def package(cli, record, tmp_path, monkeypatch, store_home) -> Path:  # noqa: F811
    """The published package, copied alone into a fresh folder with its own key and
    home, which has never seen the record."""
    out = published(cli, record, tmp_path)
    root = tmp_path / "stranger"
    shutil.copytree(out, root / "pkg")
    # what its `launch` (registry run recipe.toml ... --out run) leaves: the CPU run
    shutil.copytree(tmp_path / "run", root / "pkg" / "run")
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(root / "keys"))
    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    home = root / "home" / ".registry"
    assert cli("keys", "init").exit_code == 0
    result = cli("init", "--home", home)
    assert result.exit_code == 0, result.stderr
    monkeypatch.setenv("REGISTRY_HOME", str(home))
    return root / "pkg"


def test_a_package_alone_is_rerun_and_reproduced_in_a_fresh_home(cli, record, package):  # noqa: F811
    assert json.loads(cli("list", "--json").stdout) == []  # the stranger's ledger is empty
    result = cli("publish", "--rerun", package, "--json")
    assert result.exit_code == 0, result.stderr
    done = json.loads(result.stdout)
    assert done["package"] == record and not done["launched"]
    assert done["verdict"] == "passed"
    assert done["signature"].startswith("not checked")  # the publisher's key is not pinned
    rows = {r["name"]: r for r in done["rows"]}
    outputs = [r for name, r in rows.items() if name.endswith(" output")]
    assert len(outputs) == 8 and all(r["verdict"] == "passed" for r in outputs)
    assert rows["engine.version"]["verdict"] == "passed"
    # this captured CPU run's rows arrived in bursts: its speed figures are degraded or
    # have no interval, and each says it was not judged (never passed)
    figures = [r for r in done["rows"] if "/" in r["name"] and not r["name"].endswith("output")]
    assert figures and all(r["verdict"] == "not judged" for r in figures)
    # its package.json given to --check means the package (not a lab file)
    closure = json.loads(cli("publish", "--check", package / "package.json", "--json").stdout)
    assert closure["path"] == str(package) and "guide_class" in closure
    shown = json.loads(cli("list", "--json").stdout)
    assert [r["id"] for r in shown] == [done["record"]]  # sealed in the stranger's home


def test_a_package_whose_figure_the_rerun_does_not_reach_fails(cli, package):

    def other_output(raw) -> None:
        raw["outputs"][3]["sha256"] = "0" * 64

    resign(package, other_output)
    result = cli("publish", "--rerun", package, "--json")
    done = json.loads(result.stdout)
    assert result.exit_code == 1 and done["verdict"] == "failed"
    [row] = [r for r in done["rows"] if r["verdict"] == "failed"]
    assert row["name"].endswith(" output") and row["why"] == "other token ids"


@pytest.mark.parametrize(("unit", "new", "verdict"), [
    ("tok/s", (98.0, 96.0, 100.0), "passed"),     # at or above 0.95 x 95
    ("tok/s", (80.0, 78.0, 82.0), "failed"),      # wholly below 90.25
    ("tok/s", (90.0, 85.0, 95.0), "undecided"),   # straddles it
    ("ms", (100.0, 98.0, 103.0), "passed"),       # at or below 105 / 0.95
    ("ms", (130.0, 125.0, 135.0), "failed"),
    ("req/s", (100.0, 99.0, 101.0), "not judged"),  # no direction
])
def test_a_figure_is_judged_from_both_intervals(database_url, unit, new, verdict) -> None:
    from registry.publish.package import PackagedFigure
    from registry.publish.rerun import _judged

    old = PackagedFigure(suite="s", metric="m", value=100.0, low=95.0, high=105.0, unit=unit,
                         quality="valid")
    value, low, high = new
    again = PackagedFigure(suite="s", metric="m", value=value, low=low, high=high, unit=unit,
                           quality="valid")
    assert _judged(old, again, 0.95).verdict == verdict
    degraded = again.model_copy(update={"quality": "degraded"})
    assert _judged(old, degraded, 0.95).verdict == "not judged"
    point = old.model_copy(update={"low": None, "high": None})
    assert _judged(point, again, 0.95).verdict == "not judged"


def test_a_package_missing_a_file_is_refused_before_anything_runs(cli, package):
    (package / "suites" / "tiny-cold-v1.jsonl").unlink()
    result = cli("publish", "--rerun", package)
    assert result.exit_code == 6 and "file_missing" in result.stderr
    assert json.loads(cli("list", "--json").stdout) == []
