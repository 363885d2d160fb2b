"""The bench queue on a real PostgreSQL server, with worker processes on the scripted
engine, each given its own hardware identity: every job done exactly once, lost
leases taken over, a worker never taking another hardware's job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.postgres


@dataclass
class Fleet:
    url: str
    root: Path
    keys: Path
    keyid: str
    remote: Path
    lead: Path
    record: str
    models: Path
    env: dict[str, str]

    def home(self, name: str) -> Path:
        """A worker host's home: the team's root pinned, the remote's ledger pulled."""
        from registry.cli.keys import pin_keys
        from registry.store.create import init_home
        from registry.team.remotes import add_remote, get_remote
        from registry.team.sync import pull

        home = init_home(self.root / name / ".registry")
        pin_keys(home, [self.keyid], 1)
        add_remote(home, "origin", str(self.remote))
        pull(home, get_remote(home, "origin"))
        return home.root

    def start(self, name: str, hardware: str, **options: object) -> subprocess.Popen[str]:
        """A worker process named `name` on `hardware`, its home created on first use."""
        home = self.root / name / ".registry"
        if not home.exists():
            self.home(name)
        opts = {"url": self.url, "name": name, "hardware": hardware,
                "work_dir": str(self.root / name / "runs"),
                "remote": "origin", "heartbeat_s": 0.5, "stalled_s": 2.0, **options}
        extra = opts.pop("env", {})
        env = {**self.env, "REGISTRY_HOME": str(home), "REGISTRY_FLEET_HARDWARE": hardware,
               **extra}  # type: ignore[dict-item]
        log = (self.root / f"{name}.log").open("a")
        return subprocess.Popen([sys.executable, "-m", "tests.fleet_worker", json.dumps(opts)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log,
                                text=True)


@pytest.fixture
def queue_db(postgres_server):
    import psycopg

    name = f"q{uuid.uuid4().hex[:16]}"
    admin = postgres_server.format(db="postgres").replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    yield postgres_server.format(db=name).replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def fleet(tmp_path, queue_db, monkeypatch, hash_cache) -> Fleet:
    """The lead's home with one record sealed on the scripted engine, pushed to a folder
    remote; worker homes pin the lead's root and pull it."""
    from registry.executor.run import run
    from registry.recipe import load_recipe
    from registry.seal import seal_run
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis
    from registry.team.remotes import add_remote, get_remote
    from registry.team.sync import create_remote, push
    from tests.fleet_worker import fleet_launcher
    from tests.test_ab import recipe_pair

    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    keys = tmp_path / "keys"
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(keys))
    key = create_key(keys)
    lead = init_home(tmp_path / "lead" / ".registry")
    genesis(lead, signing_key(keys))
    a, _, models = recipe_pair(tmp_path, "0.003")
    monkeypatch.setenv("REGISTRY_MODELS", str(models))
    recipe = load_recipe(Path(a))
    run(recipe, tmp_path / "first", recipe_dir=Path(a).parent, recipe_file=Path(a),
        models_dir=models, launcher=fleet_launcher(models))
    record = seal_run(tmp_path / "first", home=lead, recipe_path=Path(a)).id
    remote = tmp_path / "remote"
    add_remote(lead, "origin", str(remote))
    create_remote(get_remote(lead, "origin"))
    push(lead, get_remote(lead, "origin"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(REGISTRY_KEYS_DIR=str(keys), REGISTRY_HASH_CACHE=str(hash_cache),
               REGISTRY_MODELS=str(models), PYTHONPATH=str(ROOT))
    return Fleet(url=queue_db, root=tmp_path, keys=keys, keyid=key.keyid, remote=remote,
                 lead=lead.root, record=record, models=models, env=env)


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
        print(j.id, j.added_at, j.started_at, j.updated_at)
    assert started_count(fleet) == {i: 1 for i in ids}
    team = team_records(fleet)
    assert fleet.record in team and all(done[i].records[0] in team for i in ids)
    assert len(team) == 3
