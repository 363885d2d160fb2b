"""Whole or nothing, for sharing: a pull or push killed at each of its write points in
turn (registry.team.sync.CRASH_POINTS; `os._exit`, which leaves files as kill -9 does)
leaves the home as before or as after, the next command completes or repairs it, and
`verify --all` passes after every recovery (as tests/test_seal_reliability.py does for
seal)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from registry.team.sync import CRASH_POINTS
from tests.conftest import ROOT
from tests.test_team import Member, act, head, seal, shared, team, verify_all  # noqa: F401


def run(member: Member, *args: str, crash: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "REGISTRY_HOME": str(member.home), "REGISTRY_KEYS_DIR": str(member.keys)}
    env.pop("REGISTRY_TEST_CRASH_AT", None)
    if crash:
        env["REGISTRY_TEST_CRASH_AT"] = crash
    return subprocess.run([sys.executable, "-m", "registry", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def listed(cli, member: Member) -> set[str]:
    r = cli("list", "--json", "--limit", "0", "--home", member.home)
    assert r.exit_code == 0, r.stderr
    return {row["id"] for row in json.loads(r.stdout)}


@pytest.mark.parametrize("point", [p for p in CRASH_POINTS if p.startswith("pull-")])
def test_a_pull_killed_at_each_write_point(cli, shared, make_run, monkeypatch,  # noqa: F811
                                           point) -> None:
    alice, bob, _, ids = shared
    act(monkeypatch, alice)
    theirs = seal(alice, make_run("theirs"))
    assert cli("push").exit_code == 0
    act(monkeypatch, bob)
    mine = seal(bob, make_run("mine"))  # a local commit: the pull replays it
    before = head(bob)
    crashed = run(bob, "pull", crash=point)
    assert crashed.returncode == 86, (crashed.stdout, crashed.stderr)
    # the next command, whichever it is, sees the home as before or as after
    report = verify_all(cli, bob)
    assert report["code"] == 0, report
    got = listed(cli, bob)
    assert got in ({*ids, mine}, {*ids, mine, theirs}), (point, got)
    assert head(bob) == before or theirs in got
    again = run(bob, "pull")
    assert again.returncode == 0, again.stderr
    assert verify_all(cli, bob)["code"] == 0
    assert listed(cli, bob) == {*ids, mine, theirs}
    assert not (bob.home / "ledger" / ".git" / "registry-pull.json").exists()
    status = subprocess.run(["git", "-C", str(bob.home / "ledger"), "status", "--porcelain"],
                            capture_output=True, text=True).stdout
    assert status == ""


@pytest.mark.parametrize("point", [p for p in CRASH_POINTS if p.startswith("push-")])
def test_a_push_killed_at_each_write_point(cli, shared, make_run, monkeypatch,  # noqa: F811
                                           point) -> None:
    alice, bob, _, ids = shared
    act(monkeypatch, bob)
    mine = seal(bob, make_run("mine"))
    crashed = run(bob, "push", crash=point)
    assert crashed.returncode == 86, (crashed.stdout, crashed.stderr)
    assert verify_all(cli, bob)["code"] == 0
    again = run(bob, "push")
    assert again.returncode == 0, again.stderr
    assert run(alice, "pull").returncode == 0
    act(monkeypatch, alice)
    assert verify_all(cli, alice)["code"] == 0
    assert listed(cli, alice) == {*ids, mine} and head(alice) == head(bob)
