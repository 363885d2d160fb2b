"""Jobs of several engine starts on the queue (a controlled reproduction, an A/B), on a
real PostgreSQL server and worker processes on the scripted engine: each start is
sealed once per job id, however often the job is retried, and the job's attestation
once; a worker killed with SIGKILL at each step loses nothing and duplicates nothing."""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid

import pytest

from tests.fleet_team import STALLED_S, Fleet
from tests.test_fleet import finish, fleet, jobs, queue_db, started_count, wait_for

pytestmark = pytest.mark.postgres
__all__ = ["fleet", "queue_db"]  # the fixtures, used by name


def second_record(fleet: Fleet) -> str:
    """Another run of the lead's recipe, sealed in its home and pushed: a control, or
    side A of an A/B, comparable with the fleet's record."""
    from registry.executor.run import run
    from registry.recipe import load_recipe
    from registry.seal import seal_run
    from registry.store.home import home_at
    from registry.team.remotes import get_remote
    from registry.team.sync import push
    from tests.fleet_worker import fleet_launcher

    recipe = fleet.root / "a.toml"
    run(load_recipe(recipe), fleet.root / "second", recipe_dir=recipe.parent,
        recipe_file=recipe, models_dir=fleet.models, launcher=fleet_launcher(fleet.models))
    lead = home_at(fleet.lead)
    rid = seal_run(fleet.root / "second", home=lead, recipe_path=recipe).id
    push(lead, get_remote(lead, "origin"))
    return rid


def sealed_for(fleet: Fleet, job: int, kind: str,
               most: int = 0) -> tuple[list[str], list[str], list[dict]]:
    """What the team remote holds for `job` (read by a fresh home after a pull): the
    records whose signed subjects carry one of the job's start tags, each as often as
    it was sealed, the attestations that judged them and their policies' parameters
    (`most`: the job's max_starts)."""
    from registry.fleet.execute import SIDES, STARTS, TAG, JobSpec, tag_bytes
    from registry.fleet.queue import hardware_queue
    from registry.store.home import home_at
    from registry.store.query import find_records, sealed_statement
    from registry.store.verifications import all_verifications

    home = home_at(fleet.home(f"reader-{uuid.uuid4().hex[:6]}"))
    spec = JobSpec(id=job, queue=hardware_queue("test-a"), kind=kind, target="")
    want = {hashlib.sha256(tag_bytes(spec, f"{i:02d}-{s}")).hexdigest()
            for i in range(2 * max(most, STARTS)) for s in SIDES}
    records = [row.id for row in find_records(home)
               if any(s.name == TAG and s.digest["sha256"] in want
                      for s in sealed_statement(home, row.id)[1].subject)]
    good, _ = all_verifications(home)
    judged = [v for v in good if set(records) & set(v.statement.judged())]
    return records, [v.id for v in judged], [v.statement.predicate.policy.parameters
                                             for v in judged]


def test_controlled_and_ab_jobs_run_from_the_queue(fleet: Fleet, cli, monkeypatch) -> None:
    control = second_record(fleet)
    monkeypatch.setenv("REGISTRY_QUEUE_URL", fleet.url)
    monkeypatch.setenv("REGISTRY_HOME", str(fleet.lead))
    both = cli("queue", "add", fleet.record[:12], "--control", control[:12], "--ab",
               control[:12])
    assert both.exit_code == 2 and "exclude" in both.stderr, both.stderr
    itself = cli("queue", "add", fleet.record[:12], "--control", fleet.record[:12])
    assert itself.exit_code == 4 and "Traceback" not in itself.stderr
    alone = cli("queue", "add", fleet.record[:12], "--max-starts", "3")
    assert alone.exit_code == 2 and "--max-starts is for" in alone.stderr, alone.stderr
    one = cli("queue", "add", fleet.record[:12], "--control", control[:12], "--max-starts", "1")
    assert one.exit_code == 4 and "looks first after 2" in one.stderr, one.stderr
    added = {}
    for option in ("--control", "--ab"):  # sequential: a pair at a time, up to 3 a side
        r = cli("queue", "add", fleet.record[:12], option, control[:12], "--hardware",
                "test-a", "--max-starts", "3", "--json")
        assert r.exit_code == 0, r.stderr
        job = json.loads(r.stdout)
        assert job["control"] == control and job["target"] == fleet.record
        assert job["max_starts"] == 3
        added[job["kind"]] = job["id"]
    assert sorted(added) == ["ab", "controlled"]
    [report] = finish([fleet.start("ws", "test-a", once=False, max_jobs=2)])
    assert sorted(report["jobs"]) == sorted(added.values())
    done = jobs(fleet)
    for kind, job in added.items():
        j = done[job]
        assert j.state.value == "done", (j.phase, j.reason, j.log)
        assert len(j.records) in (4, 6) and len(set(j.records)) == len(j.records)
        assert len(j.attestations) == 1
        records, attested, [signed] = sealed_for(fleet, job, kind, most=3)
        assert sorted(records) == sorted(j.records) and attested == j.attestations
        assert signed["max_starts"] == 3 and signed["look_level"] == pytest.approx(0.975)
        assert signed["stopped"].startswith(("decided after", "most starts spent (3 a side"))
    assert started_count(fleet) == {job: 1 for job in added.values()}
    table = cli("queue", "list")
    assert "controlled" in table.stdout and all(len(x) <= 80 for x in table.stdout.splitlines())


STEPS = ["suite", "second start", "sealed", "pushing"]
"""Where a job of several starts is killed: before any start is sealed; while its second
start runs, the first sealed; its attestation sealed, not pushed; while pushing."""


def second_start_running(fleet: Fleet, job: int, kind: str) -> bool:
    found = list((fleet.root / "wa" / "runs").glob(f"job-{job}-{kind}-*/01-*/fleet-job.json"))
    return bool(found)


@pytest.mark.parametrize("kind", ["ab", "controlled"])
def test_a_job_of_several_starts_killed_at_each_step_seals_each_start_once(
        fleet: Fleet, kind: str) -> None:
    from registry.fleet.queue import Kind, add_job

    control = second_record(fleet)
    steps = STEPS if kind == "ab" else ["second start", "sealed"]
    for step in steps:
        job = add_job(fleet.url, Kind(kind), fleet.record, "test-a", control=control).id
        env = {} if step == "second start" else {"REGISTRY_FLEET_PAUSE_AT": f"{step}:300"}
        victim = fleet.start("wa", "test-a", env=env)
        if step == "second start":
            wait_for(lambda job=job: second_start_running(fleet, job, kind), 400,
                     f"job {job}'s second start")
        else:
            wait_for(lambda job=job, step=step: jobs(fleet)[job].phase == step, 400,
                     f"job {job} at {step}")
        victim.kill()  # SIGKILL: no cleanup, the lease is simply no longer renewed
        victim.wait()
        time.sleep(STALLED_S + 1)
        [report] = finish([fleet.start("wb", "test-a", once=True)])
        if step == "suite":  # nothing sealed yet: any host of the hardware runs it
            assert report["jobs"] == [job], (step, jobs(fleet)[job])
        else:  # its first record is in wa's home alone: only wa may finish it
            assert report["jobs"] == [] and jobs(fleet)[job].queue == "home:wa", step
            [again] = finish([fleet.start("wa", "test-a", once=True)])
            assert again["jobs"] == [job]
        j = jobs(fleet)[job]
        assert j.state.value == "done", (step, j.reason, j.log)
        assert started_count(fleet)[job] == 2
        records, attested, _ = sealed_for(fleet, job, kind)
        assert len(records) == 4 == len(set(records)), (step, records)  # once each
        assert sorted(records) == sorted(j.records) and attested == j.attestations, step
        if step in ("sealed", "pushing"):
            assert "resumed" in (j.reason or ""), j.reason
        if step == "second start":  # the first start (or more) taken, not run again
            assert re.search(r"\(([123]) of its starts sealed by an earlier attempt, "
                             r"reused\)", j.reason or ""), j.reason


def test_queue_list_and_the_fleet_page_name_a_job_alike() -> None:
    """Each kind in its command's order (`ab CONTROL TARGET`, `reproduce TARGET --control
    CONTROL`); the fleet page once said the controlled one backwards."""
    from datetime import UTC, datetime

    from registry.cli.queue import _row as listed
    from registry.fleet.queue import Job, Kind, State
    from registry.report.fleet import _row as paged

    now = datetime.now(UTC)
    said = {}
    for kind in Kind:
        job = Job(id=1, kind=kind, target="b" * 64, control=None if kind is Kind.reproduce
                  else "a" * 64, hardware="hw", state=State.queued, phase="queued",
                  attempts=0, queue="hw:hw", added_at=now, updated_at=now)
        said[kind] = job.what()
        assert listed(job)[1] == said[kind]  # one id length in both
        assert paged(job, set())[1] == said[kind]
    assert said == {Kind.reproduce: f"reproduce {'b' * 12}",
                    Kind.controlled: f"controlled {'b' * 12} (control {'a' * 12})",
                    Kind.ab: f"ab {'a' * 12} vs {'b' * 12}"}
