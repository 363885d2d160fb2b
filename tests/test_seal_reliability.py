"""Whole or nothing: a seal killed at each step leaves a whole record or none; eight
processes sealing into one home at once give eight records and a consistent ledger
and index (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import git
import pytest

from registry.store.index import open_index
from tests.conftest import ROOT

SEAL = """
import sys
from pathlib import Path
from registry.recipe import load_recipe
from registry.seal import seal_resolved
from registry.store.home import find_home
from tests.conftest import ROOT, resolved_identity
recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
print(seal_resolved(Path(sys.argv[1]), home=find_home(), identity=resolved_identity(),
                    recipe=recipe).id)
"""


def seal_process(run, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SEAL, str(run)], cwd=ROOT, text=True,
                            env={**os.environ, **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def listed(cli) -> list[str]:
    r = cli("list", "--json", "--limit", "0")
    assert r.exit_code == 0, r.stderr
    return [row["id"] for row in json.loads(r.stdout)]


def assert_consistent(cli, home, expected: int) -> None:
    """Ledger, index and objects agree: every record verifies, nothing is pending,
    the ledger has no stray files and git finds no damage."""
    ids = listed(cli)
    assert len(ids) == expected
    r = cli("verify", "--all", "--json")
    assert r.exit_code == 0, r.stdout
    assert sorted(rec["id"] for rec in json.loads(r.stdout)["records"]) == sorted(ids)
    assert open_index(home).pending() == []
    repo = git.Repo(home.ledger)
    assert not repo.is_dirty(untracked_files=True)
    repo.git.fsck("--strict")
    assert len(list(repo.iter_commits())) == 1 + expected  # keyring v1 + one per record


@pytest.mark.parametrize("step, survives", [("objects", False), ("index", False), ("ledger", True)])
def test_a_seal_killed_after_each_step(cli, store_home, make_run, step, survives) -> None:
    crashed = seal_process(make_run("crashed"), REGISTRY_TEST_CRASH_AT=step)
    out, err = crashed.communicate(timeout=120)
    assert crashed.returncode == 86, err
    assert out == ""  # it never got to print an id
    assert_consistent(cli, store_home, 1 if survives else 0)
    after = seal_process(make_run("after"))
    out, err = after.communicate(timeout=120)
    assert after.returncode == 0, err
    assert out.strip() in listed(cli)
    assert_consistent(cli, store_home, 2 if survives else 1)


def test_debris_of_an_uncommitted_ledger_write_is_cleared(cli, store_home, make_run,
                                                           seal_run_dir) -> None:
    debris = store_home.ledger / "records" / ("e" * 64)
    debris.mkdir(parents=True)
    (debris / "statement.json").write_text("{}")
    repo = git.Repo(store_home.ledger)
    repo.git.add("records")  # as if the crash came between `git add` and `git commit`
    (store_home.ledger / ".git" / "index.lock").write_text("")
    sealed = seal_run_dir(make_run())
    assert not debris.exists()
    assert listed(cli) == [sealed.id]
    assert_consistent(cli, store_home, 1)


def test_eight_concurrent_seals(cli, store_home, make_run) -> None:
    runs = [make_run(f"run{i}", steps=(0.01 + i / 1000,)) for i in range(8)]
    procs = [seal_process(run) for run in runs]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in results]
    ids = {out.strip() for out, _ in results}
    assert len(ids) == 8 and ids == set(listed(cli))
    assert_consistent(cli, store_home, 8)
