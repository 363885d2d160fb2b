"""Issue 34: what a database writer can do to the queue. Rows inserted with plain SQL
into procrastinate's table on the real PostgreSQL the fleet tests start (no signing key,
never the project's own code): a job names only what the signed ledger holds; anything
else is listed as malformed and failed once, with the reason, before anything runs; a
job's claim moves only when it rests on the job's record, and only after the run."""

from __future__ import annotations

import json
import signal

import pytest

from tests.fleet_team import Fleet
from tests.test_fleet import finish, fleet, jobs, queue_db, started_count, wait_for

pytestmark = pytest.mark.postgres
__all__ = ["fleet", "queue_db"]  # the fixtures, used by name


def insert(fleet: Fleet, args: object, task: str = "registry.fleet.job",
           queue: str = "hw:test-a") -> int:
    """One job row, as anyone who can write the queue's database adds it."""
    import psycopg
    from psycopg.types.json import Jsonb

    from registry.fleet.queue import ensure_schema

    ensure_schema(fleet.url)  # the tables a first worker would have made
    with psycopg.connect(fleet.url, autocommit=True) as db:
        row = db.execute("INSERT INTO procrastinate_jobs (queue_name, task_name, args) "
                         "VALUES (%s, %s, %s) RETURNING id", (queue, task, Jsonb(args))
                         ).fetchone()
    assert row is not None
    return int(row[0])


def test_rows_that_are_not_jobs_are_listed_and_fail_once(fleet: Fleet, cli,
                                                         monkeypatch) -> None:
    recipe = next(fleet.root.glob("*.toml"))  # a recipe lying on the worker host
    rows = {
        "shell": insert(fleet, {"kind": "shell", "target": "rm -rf /", "control": None}),
        "object": insert(fleet, {"kind": "reproduce", "target": {"id": fleet.record},
                                 "control": None}),
        "extra": insert(fleet, {"kind": "reproduce", "target": fleet.record,
                                "control": None, "claim": None, "argv": ["sh"]}),
        "path": insert(fleet, {"kind": "ab", "target": str(recipe),
                               "control": str(recipe)}),
        "task": insert(fleet, {"kind": "reproduce", "target": fleet.record}, task="shell"),
        "looks": insert(fleet, {"kind": "reproduce", "target": fleet.record, "control": None,
                                "max_starts": 3}),
        "starts": insert(fleet, {"kind": "ab", "target": fleet.record, "control": "0" * 64,
                                 "max_starts": 10**9}),
    }
    import psycopg

    with pytest.raises(psycopg.errors.CheckViolation):  # procrastinate would hang on it
        insert(fleet, ["reproduce", fleet.record])
    monkeypatch.setenv("REGISTRY_QUEUE_URL", fleet.url)
    monkeypatch.setenv("REGISTRY_HOME", str(fleet.lead))
    listed = cli("queue", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    shown = {j["id"]: j for j in json.loads(listed.stdout)["jobs"]}
    assert set(shown) == set(rows.values())
    assert all(shown[i]["malformed"].startswith("malformed job") for i in rows.values())
    assert "kind" in shown[rows["shell"]]["malformed"]
    assert "argv: not an argument" in shown[rows["extra"]]["malformed"]
    assert "takes no max_starts" in shown[rows["looks"]]["malformed"]
    assert "max_starts" in shown[rows["starts"]]["malformed"]
    table = cli("queue", "list")
    assert table.exit_code == 0 and table.stdout.count("malformed job") >= len(rows)
    page = cli("report", "--fleet", "--out", fleet.root / "site")
    assert page.exit_code == 0, page.stderr
    assert "malformed job" in (fleet.root / "site" / "fleet.html").read_text()
    proc = fleet.start("wm", "test-a")
    try:
        wait_for(lambda: all(j.state.value == "failed" for j in jobs(fleet).values()), 120,
                 "every row failed")
    finally:
        proc.send_signal(signal.SIGTERM)
        finish([proc], timeout=60)
        print((fleet.root / "wm.log").read_text()[-3000:])
    done = jobs(fleet)
    for i in rows.values():
        j = done[i]
        assert j.state.value == "failed" and j.attempts == 1, (j.state, j.attempts)
        if i != rows["task"]:  # procrastinate fails a task it does not know by itself
            assert j.reason and j.reason.startswith("not retried, no retry can fix it: "
                                                    "malformed job"), j.reason
            assert "AssertionError" not in j.reason
    assert started_count(fleet) == {i: 1 for i in rows.values()}
    assert not list((fleet.root / "wm" / "runs").glob("job-*")), "something ran"


def test_a_job_moves_only_the_claim_resting_on_its_record(fleet: Fleet, cli,
                                                          monkeypatch) -> None:
    """A row names the fleet's record and a claim that rests on no record: the worker
    refuses it before anything runs, and the claim is never moved (it used to be signed
    `reproducing` first)."""
    from registry.claims.view import show_claim
    from registry.store.home import home_at
    from registry.team.remotes import get_remote
    from registry.team.sync import push

    monkeypatch.setenv("REGISTRY_HOME", str(fleet.lead))
    r = cli("claim", "add", "cb", "--value", "400", "--metric", "median 99/(t[99]-t[0])",
            "--by", "lab", "--model", "tiny-llama")
    assert r.exit_code == 0, r.stderr
    lead = home_at(fleet.lead)
    push(lead, get_remote(lead, "origin"))
    job = insert(fleet, {"kind": "reproduce", "target": fleet.record, "control": None,
                         "claim": "cb"})
    [report] = finish([fleet.start("wc", "test-a", once=True)])
    assert report["failed"] == [job]
    j = jobs(fleet)[job]
    assert j.state.value == "failed" and j.attempts == 1 and j.claim_moves == []
    assert j.reason and "claim cb" in j.reason and j.records == []
    reader = home_at(fleet.home("claim-reader"))
    assert show_claim(reader, "cb").status == "submitted"
    assert show_claim(home_at(fleet.root / "wc" / ".registry"), "cb").status == "submitted"
