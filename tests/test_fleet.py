"""The bench queue on a real PostgreSQL server, with worker processes on the scripted
engine, each given its own hardware identity: every job done exactly once, lost
leases taken over, a worker never taking another hardware's job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from registry.executor import orphans
from tests.conftest import ROOT, fresh_database
from tests.fleet_team import STALLED_S, Fleet, build_fleet

pytestmark = pytest.mark.postgres


@pytest.fixture
def queue_db(postgres_server):
    with fresh_database(postgres_server, "q") as url:
        yield url.replace("+psycopg", "")


@pytest.fixture
def fleet(tmp_path, queue_db, monkeypatch, hash_cache) -> Fleet:
    """The lead's home with one record sealed on the scripted engine, pushed to a folder
    remote; worker homes pin the lead's root and pull it (tests/fleet_team.py)."""
    for name in ("REGISTRY_DATABASE_URL", "REGISTRY_KEYS_DIR", "REGISTRY_MODELS"):
        monkeypatch.delenv(name, raising=False)  # restored after the test
    monkeypatch.setenv("REGISTRY_KEYS_DIR", "")
    monkeypatch.setenv("REGISTRY_MODELS", "")
    return build_fleet(tmp_path, queue_db)


def add(fleet: Fleet, n: int, hardware: str) -> list[int]:
    from registry.fleet.queue import Kind, add_job

    return [add_job(fleet.url, Kind.reproduce, fleet.record, hardware).id for _ in range(n)]


def jobs(fleet: Fleet) -> dict[int, object]:
    from registry.fleet.queue import list_jobs

    return {j.id: j for j in list_jobs(fleet.url).jobs}


def finish(procs: list[subprocess.Popen[str]], timeout: float = 600) -> list[dict]:
    out = []
    for p in procs:
        stdout, _ = p.communicate(timeout=timeout)
        assert p.returncode == 0, stdout
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def started_count(fleet: Fleet) -> dict[int, int]:
    """How many times procrastinate started each job (its own event log)."""
    import psycopg

    with psycopg.connect(fleet.url) as db:
        rows = db.execute("SELECT job_id, count(*) FROM procrastinate_events "
                          "WHERE type = 'started' GROUP BY job_id").fetchall()
    return dict(rows)


def team_records(fleet: Fleet) -> list[str]:
    """Every record the team remote holds, read by a fresh home after a pull."""
    from registry.store.home import home_at
    from registry.store.query import find_records

    home = home_at(fleet.home(f"reader-{uuid.uuid4().hex[:6]}"))
    return [r.id for r in find_records(home)]


def test_two_jobs_run_once_each_and_their_records_reach_the_team(fleet: Fleet) -> None:
    ids = add(fleet, 2, "test-a")
    [report] = finish([fleet.start("w1", "test-a", once=False, max_jobs=2)])
    assert sorted(report["jobs"]) == ids, [(j.reason, j.log) for j in jobs(fleet).values()]
    done = jobs(fleet)
    for i in ids:
        j = done[i]
        assert j.state.value == "done", (j.phase, j.reason, j.log)
        assert len(j.records) == 1 and len(j.attestations) == 1 and j.pushed
        assert j.worker == "w1" and j.attempts == 1  # procrastinate counts the run that ended
    assert started_count(fleet) == {i: 1 for i in ids}
    team = team_records(fleet)
    assert fleet.record in team and all(done[i].records[0] in team for i in ids)
    assert len(team) == 3


def wait_for(check, timeout: float = 300, what: str = "") -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def tagged(fleet: Fleet, job_ids: list[int], homes: list[str] | None = None
           ) -> dict[int, list[str]]:
    """Per job, the records whose signed subjects carry that job's tag: on the team
    remote (read by a fresh home after a pull), or in the named worker homes."""
    import hashlib

    from registry.fleet.execute import TAG, JobSpec, tag_bytes
    from registry.fleet.queue import hardware_queue
    from registry.store.home import home_at
    from registry.store.query import find_records, sealed_statement

    readers = [home_at(fleet.root / h / ".registry") for h in homes] if homes else \
        [home_at(fleet.home(f"reader-{uuid.uuid4().hex[:6]}"))]
    found: dict[int, list[str]] = {i: [] for i in job_ids}
    want = {}
    for i in job_ids:
        for hw in ("test-a", "test-b"):
            spec = JobSpec(id=i, queue=hardware_queue(hw), kind="reproduce", target="")
            want[hashlib.sha256(tag_bytes(spec)).hexdigest()] = i
    for home in readers:
        for row in find_records(home):
            _, st = sealed_statement(home, row.id)
            for sub in st.subject:
                if sub.name == TAG and sub.digest["sha256"] in want:
                    found[want[sub.digest["sha256"]]].append(row.id)
    return found


def test_fifty_jobs_three_workers_each_done_once_on_its_own_hardware(fleet: Fleet) -> None:
    """Without a team remote (pushing is the kill test's): each record stays in the home
    of the worker that sealed it, and every home is searched for every job's tag."""
    a_jobs, b_jobs = add(fleet, 38, "test-a"), add(fleet, 12, "test-b")
    procs = [fleet.start(name, hw, remote=None)
             for name, hw in (("w1", "test-a"), ("w2", "test-a"), ("w3", "test-b"))]
    wait_for(lambda: all(j.state.value in ("done", "failed")
                         for j in jobs(fleet).values()), 1500, "50 jobs")
    for p in procs:  # graceful stop: idle workers leave at once
        p.send_signal(signal.SIGTERM)
    reports = {r["name"]: r for r in finish(procs, timeout=60)}
    done = jobs(fleet)
    assert all(j.state.value == "done" for j in done.values()), \
        [(j.id, j.reason) for j in done.values() if j.state.value != "done"]
    assert started_count(fleet) == {i: 1 for i in a_jobs + b_jobs}  # none ran twice
    for i in a_jobs:
        assert done[i].worker in ("w1", "w2")  # never another hardware's job
    for i in b_jobs:
        assert done[i].worker == "w3"
    assert sorted(reports["w3"]["jobs"]) == b_jobs
    assert sorted(reports["w1"]["jobs"] + reports["w2"]["jobs"]) == a_jobs
    records = [r for j in done.values() for r in j.records]
    assert len(records) == len(set(records)) == 50
    assert all(len(j.attestations) == 1 and not j.pushed for j in done.values())
    per_job = tagged(fleet, a_jobs + b_jobs, ["w1", "w2", "w3"])
    assert all(per_job[i] == done[i].records for i in per_job), per_job


PHASES = ["taken", "engine", "suite", "sealing", "sealed", "pushing"]


def test_a_worker_killed_at_each_step_loses_nothing_and_seals_once(fleet: Fleet) -> None:
    """kill -9 at each phase: the lease runs out, the job runs again (elsewhere before
    sealing; on the same home after, since only it holds what was sealed), and the team
    ends with exactly one record per job."""
    ids = []
    for phase in PHASES:
        [job] = add(fleet, 1, "test-a")
        ids.append(job)
        victim = fleet.start("wa", "test-a", env={"REGISTRY_FLEET_PAUSE_AT": f"{phase}:120"})
        wait_for(lambda job=job, phase=phase: jobs(fleet)[job].phase == phase, 200,
                 f"job {job} at {phase}")
        victim.kill()  # SIGKILL: no cleanup, the lease is simply no longer renewed
        victim.wait()
        time.sleep(STALLED_S + 1)  # the heartbeat is now older than the lease
        sealed_phase = phase in ("sealing", "sealed", "pushing")
        other = fleet.start("wb", "test-a", once=True)
        [report] = finish([other])
        if sealed_phase:
            assert report["jobs"] == [], phase  # not its home's: left for wa
            assert jobs(fleet)[job].queue == "home:wa"
            [again] = finish([fleet.start("wa", "test-a", once=True)])
            assert again["jobs"] == [job]
        else:
            assert report["jobs"] == [job], (phase, jobs(fleet)[job])
        j = jobs(fleet)[job]
        assert j.state.value == "done", (phase, j.reason)
        assert started_count(fleet)[job] == 2 and len(j.records) == 1
        if phase in ("sealed", "pushing"):
            assert "resumed" in (j.reason or ""), j.reason  # found, not sealed again
    per_job = tagged(fleet, ids)
    assert all(len(per_job[i]) == 1 and per_job[i] == jobs(fleet)[i].records for i in ids), \
        per_job


def test_a_job_that_keeps_failing_stops_after_three_runs_with_its_log(fleet: Fleet) -> None:
    """Under a host policy that opts in to retrying engine faults (the lab's never does:
    tests/test_host_policy.py)."""
    [job] = add(fleet, 1, "test-a")
    proc = fleet.start("wf", "test-a", env={"FLEET_TEST_ENGINE_FAILS": "1"},
                       policy=fleet.policy(retry_engine_faults=True))
    wait_for(lambda: jobs(fleet)[job].state.value == "failed", 200, "three failures")
    proc.send_signal(signal.SIGTERM)
    finish([proc], timeout=60)
    j = jobs(fleet)[job]
    assert j.attempts == 3 and started_count(fleet)[job] == 3
    assert j.reason and j.reason.startswith("failed 3 times, not retried: "), j.reason
    assert "engine exited" in j.reason and "out of memory" in (j.log or ""), (j.reason, j.log)
    assert j.records == []


def test_cancel_and_the_commands(fleet: Fleet, cli, monkeypatch) -> None:
    monkeypatch.setenv("REGISTRY_QUEUE_URL", fleet.url)
    monkeypatch.setenv("REGISTRY_HOME", str(fleet.lead))
    r = cli("queue", "add", fleet.record[:12], "--hardware", "test-a", "--json")
    assert r.exit_code == 0, r.stderr
    job = json.loads(r.stdout)
    assert job["state"] == "queued" and job["target"] == fleet.record
    r = cli("queue", "add", fleet.record[:12], "--json")  # default: the record's host
    from registry.fleet.hardware import detect

    assert json.loads(r.stdout)["hardware"] == detect().identity
    listed = json.loads(cli("queue", "list", "--json").stdout)
    assert [j["id"] for j in listed["jobs"]] == [job["id"], job["id"] + 1]
    assert listed["backlog"] == {"test-a": 1, detect().identity: 1}
    assert cli("queue", "cancel", str(job["id"])).exit_code == 0
    assert json.loads(cli("queue", "list", "--state", "cancelled", "--json").stdout)[
        "jobs"][0]["id"] == job["id"]
    [report] = finish([fleet.start("wc", "test-a", once=True)])
    assert report["jobs"] == []  # a cancelled job is never taken
    again = cli("queue", "cancel", str(job["id"]))
    assert again.exit_code == 6 and "cancelled" in again.stderr
    table = cli("queue", "list")
    assert table.exit_code == 0 and "backlog:" in table.stdout
    assert all(len(line) <= 80 for line in table.stdout.splitlines()), table.stdout
    site = fleet.root / "site"
    r = cli("report", "--fleet", "--out", site)
    assert r.exit_code == 0, r.stderr
    page = (site / "fleet.html").read_text()
    assert f"<td>{job['id']}</td>" in page and "cancelled" in page and detect().identity in page
    assert 'href="fleet.html"' in (site / "index.html").read_text()
    bad = cli("queue", "add", fleet.record[:12], "--hardware", "Big GPU")
    assert bad.exit_code == 4 and "Traceback" not in bad.stderr
    assert cli("queue", "add", "ffffffffff").exit_code == 5
    assert cli("queue", "cancel", "999").exit_code == 5
    drift = cli("queue", "add", fleet.record[:12], "--hardware", "test-b", "--allow-env-drift")
    assert drift.exit_code == 0 and "(environment drift allowed)" in drift.stdout
    assert json.loads(cli("queue", "list", "--json").stdout)["jobs"][-1]["allow_env_drift"]
    mixed = cli("queue", "add", fleet.record[:12], "--ab", fleet.record[:12],
                "--allow-env-drift")
    assert mixed.exit_code == 2 and "--allow-env-drift is for reproductions" in mixed.stderr
    monkeypatch.delenv("REGISTRY_QUEUE_URL")
    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    none = cli("queue", "list")
    assert none.exit_code == 2 and "REGISTRY_QUEUE_URL" in none.stderr


def test_a_claim_job_moves_the_claim_and_another_home_sees_it(fleet: Fleet, cli,
                                                              monkeypatch) -> None:
    from registry.claims.view import show_claim
    from registry.fleet.submit import submit
    from registry.store.home import home_at
    from registry.team.remotes import get_remote
    from registry.team.sync import push

    monkeypatch.setenv("REGISTRY_HOME", str(fleet.lead))
    r = cli("claim", "add", "tiny-fleet", "--value", "400", "--metric",
            "median 99/(t[99]-t[0])", "--by", "lab", "--model", "tiny-llama",
            "--quantization", "bfloat16", "--engine", "vllm", "--tp", "1")
    assert r.exit_code == 0, r.stderr
    r = cli("claim", "advance", "tiny-fleet", "--to", "queued", "--record", fleet.record)
    assert r.exit_code == 0, r.stderr
    lead = home_at(fleet.lead)
    push(lead, get_remote(lead, "origin"))
    job = submit(lead, "tiny-fleet", hardware="test-a", url=fleet.url)
    assert job.claim == "tiny-fleet" and job.target == fleet.record
    [report] = finish([fleet.start("wk", "test-a", once=True)])
    assert report["jobs"] == [job.id]
    done = jobs(fleet)[job.id]
    assert done.state.value == "done", done.reason
    assert done.claim_moves[0] == "tiny-fleet -> reproducing", done.claim_moves
    verdict = done.reason or ""
    final = done.claim_moves[1]
    if "verdict passed" in verdict:
        assert final in ("tiny-fleet -> confirmed", "tiny-fleet -> confirmed-adjusted") or \
            final.startswith("not moved to confirmed"), final
    else:
        assert final == "tiny-fleet -> refuted" or final.startswith("not moved to refuted"), \
            final
    reader = home_at(fleet.home("claim-reader"))  # the moves travelled with the push
    seen = show_claim(reader, "tiny-fleet")
    expected = final.split(" -> ")[1] if " -> " in final else "reproducing"
    assert seen.status == expected, (seen.status, done.claim_moves)


def test_a_hopeless_failure_is_not_retried(fleet: Fleet, cli, monkeypatch) -> None:
    """An unknown record, or a claim the worker's home does not hold, would fail the same
    way on every retry: each job runs once and fails with the reason; `queue list` shows
    its attempts and that reason."""
    from registry.fleet.queue import Kind, add_job

    unknown = add_job(fleet.url, Kind.reproduce, "f" * 64, "test-a").id
    bad_claim = add_job(fleet.url, Kind.reproduce, fleet.record, "test-a",
                        claim="no-such-claim").id
    [report] = finish([fleet.start("wh", "test-a", once=False, max_jobs=2)])
    assert sorted(report["failed"]) == [unknown, bad_claim]
    done = jobs(fleet)
    for job in (unknown, bad_claim):
        j = done[job]
        assert j.state.value == "failed" and j.attempts == 1, (j.state, j.attempts)
        assert j.reason and j.reason.startswith("not retried, no retry can fix it: "), \
            j.reason
    assert "no-such-claim" in (done[bad_claim].reason or "")
    logged = (fleet.root / "wh.log").read_text()
    assert "Traceback" not in logged and "no-such-claim" in logged  # one line, no traceback
    assert done[bad_claim].records == []  # refused before anything ran
    assert started_count(fleet) == {unknown: 1, bad_claim: 1}
    monkeypatch.setenv("REGISTRY_QUEUE_URL", fleet.url)
    table = cli("queue", "list")
    assert table.exit_code == 0
    assert f"job {unknown}: not retried, no retry can fix it" in table.stdout, table.stdout


# --- the host policy (registry/fleet/policy.py): the lab's rules by default -------------

DATA = ROOT / "tests" / "data"


def engine_pids(folder: Path) -> list[int]:
    """The engines a host's pid files name (registry/executor/orphans.py)."""
    return [json.loads(p.read_text())["pid"] for p in folder.glob("engine-*.json")]


def add_one(fleet: Fleet, hardware: str = "test-a") -> int:
    from registry.fleet.queue import Kind, add_job

    return add_job(fleet.url, Kind.reproduce, fleet.record, hardware).id


def test_a_crashing_engine_gets_one_run_one_probe_and_the_host_is_held(fleet: Fleet) -> None:
    """The engine process is killed with -9 mid-run: the job fails once with the reason,
    the run directory keeps the evidence, one probe ran, the host is held, the worker
    takes nothing more (the second job stays queued), and no worker starts on the host
    until a person removes the hold."""
    first, second = add_one(fleet), add_one(fleet)
    starts = fleet.root / "starts.txt"
    proc = fleet.start("wq", "test-a", env={"REGISTRY_FLEET_PAUSE_AT": "suite:6",
                                            "FLEET_TEST_ENGINE_STARTS": str(starts)})
    wait_for(lambda: jobs(fleet)[first].phase == "suite", 200, "the suite")
    [engine] = engine_pids(fleet.root / "host" / "engines")
    os.kill(engine, signal.SIGKILL)
    [report] = finish([proc], timeout=120)
    j = jobs(fleet)[first]
    assert report["failed"] == [first] and report["jobs"] == [first], report
    assert j.state.value == "failed" and j.attempts == 1 and started_count(fleet) == {first: 1}
    assert j.reason and j.reason.startswith(
        "engine fault, not retried (host policy): the engine exited (code -9) during the "
        "suite"), j.reason
    assert "health probe `true` passed" in j.reason and "host held for a person" in j.reason
    assert len(starts.read_text().splitlines()) == 1  # no second start
    assert jobs(fleet)[second].state.value == "queued"
    run_dir = fleet.root / "wq" / "runs" / f"job-{first}-attempt-1"
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "failed" and (run_dir / "server.log").stat().st_size > 0
    probe = json.loads((fleet.root / "wq" / "runs" / f"job-{first}-probe.json").read_text())
    assert probe["passed"] and probe["argv"] == ["true"]
    hold = json.loads((fleet.root / "host" / "host-held.json").read_text())
    assert hold["job"] == first and hold["reason"] == j.reason
    again = fleet.start("wq2", "test-a", once=True)
    again.communicate(timeout=120)
    assert again.returncode != 0 and jobs(fleet)[second].state.value == "queued"
    assert "held for a person" in (fleet.root / "wq2.log").read_text()


def test_a_worker_killed_mid_run_leaves_no_engine(fleet: Fleet) -> None:
    job = add_one(fleet)
    pids = fleet.root / "host" / "engines"
    victim = fleet.start("wk", "test-a", env={"REGISTRY_FLEET_PAUSE_AT": "suite:120"})
    wait_for(lambda: jobs(fleet)[job].phase == "suite", 200, "the suite")
    [engine] = engine_pids(pids)
    started = orphans.start_time(engine)
    assert orphans.alive(engine, started)
    victim.kill()
    victim.wait()
    wait_for(lambda: not orphans.alive(engine, started), 30, "the engine to go with its worker")
    from registry.executor.engine import session_pids

    assert session_pids(engine) == []
    assert orphans.reap(pids) == [] and engine_pids(pids) == []  # the next worker's sweep


def test_the_muse_claim_queues_for_four_b70s_and_only_a_b70_worker_takes_it(
        fleet: Fleet, cli, monkeypatch) -> None:
    from registry.fleet.submit import submit
    from registry.store.home import home_at

    monkeypatch.setenv("REGISTRY_HOME", str(fleet.lead))
    r = cli("claim", "import", DATA / "lab-claims" / "lab-muse-glimmer-30b-q8-dflash-tp4",
            "--json")
    assert r.exit_code == 0, r.stderr
    job = submit(home_at(fleet.lead), "lab-muse-glimmer-30b-q8-dflash-tp4", url=fleet.url)
    assert job.hardware == "intel-arc-pro-b70x4", job
    noop = {"FLEET_NOOP_JOBS": "1"}
    [cpu] = finish([fleet.start("cpu", "", once=True, env=noop)])
    assert cpu["hardware"].startswith("cpu-") and cpu["jobs"] == []
    captured = {**noop, "REGISTRY_DEVICES_CAPTURED": str(
        DATA / "xpu" / "minimax-current-system-20260520.md")}
    [b70] = finish([fleet.start("b70", "", once=True, env=captured)])
    assert b70["hardware"] == "intel-arc-pro-b70x4" and b70["jobs"] == [job.id], b70
    assert jobs(fleet)[job.id].state.value == "done"


def test_storage_is_admitted_before_the_start(fleet: Fleet) -> None:
    """A reserve the work folder's filesystem cannot keep (the documented way to stand
    for a full disk; tests/test_host_policy.py fills a real tmpfs): refused with the
    figures, no engine started, not retried."""
    job = add_one(fleet)
    starts = fleet.root / "starts.txt"
    [report] = finish([fleet.start("ws", "test-a", once=True,
                                   policy=fleet.policy(reserve_gib=1e6),
                                   env={"FLEET_TEST_ENGINE_STARTS": str(starts)})])
    j = jobs(fleet)[job]
    assert report["failed"] == [job] and j.state.value == "failed" and j.attempts == 1
    assert j.reason and j.reason.startswith("not retried, no retry can fix it: storage "
                                            "refused: "), j.reason
    assert "GiB" in j.reason and "bytes) free" in j.reason and "1000000.000 GiB" in j.reason
    assert not starts.exists()


def test_an_engine_that_needed_sigkill_holds_the_host(fleet: Fleet) -> None:
    """The engine ignores SIGTERM: its stop's steps are recorded, SIGKILL ends it, the
    job's results stand, and the host is held (a hard kill is a fault: the lab's rule)."""
    first, second = add_one(fleet), add_one(fleet)
    policy = fleet.policy(stop={"pid_dir": str(fleet.root / "host" / "engines"),
                                "grace_s": 0.5, "group_grace_s": 0.5})
    [report] = finish([fleet.start("wt", "test-a", policy=policy,
                                   env={"FLEET_TEST_ENGINE_IGNORES_TERM": "1"})])
    j = jobs(fleet)[first]
    assert report["jobs"] == [first] and j.state.value == "done", (j.reason, report)
    assert "ignored SIGTERM and was killed" in (j.reason or "") and report["held"]
    assert jobs(fleet)[second].state.value == "queued"
    status = json.loads((fleet.root / "wt" / "runs" / f"job-{first}-attempt-1" /
                         "status.json").read_text())
    assert [s["step"] for s in status["cleanup"]["steps"]] == [
        "TERM server", "TERM group", "KILL group"]
    assert json.loads((fleet.root / "host" / "host-held.json").read_text())["job"] == first
