"""One bench-queue job end to end on the real vLLM CPU engine: a claim resting on a
sealed record is queued, a `registry worker --once` process reproduces it, seals the
record and its attestation, moves the claim and pushes; another home pulls all of it.
Two engine starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from tests.conftest import ROOT
from tests.fleet_team import Fleet

pytestmark = [pytest.mark.engine, pytest.mark.postgres]


def test_queue_add_worker_seal_attest_claim_pull(tmp_path, tiny_models, postgres_server,
                                                 monkeypatch, cli) -> None:
    import psycopg

    from registry.claims.view import show_claim
    from registry.fleet.queue import list_jobs
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.home import home_at
    from registry.store.query import find_records
    from registry.store.trust import genesis
    from registry.store.verifications import verifications_of
    from registry.team.remotes import add_remote, get_remote
    from registry.team.sync import create_remote, push

    name = f"q{uuid.uuid4().hex[:12]}"
    admin = postgres_server.format(db="postgres").replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    url = postgres_server.format(db=name).replace("+psycopg", "")
    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("REGISTRY_QUEUE_URL", url)
    key = create_key(tmp_path / "keys")
    lead = init_home(tmp_path / "lead" / ".registry")
    genesis(lead, signing_key(tmp_path / "keys"))
    monkeypatch.setenv("REGISTRY_HOME", str(lead.root))
    r = cli("run", ROOT / "recipes/tiny-bf16-kv.toml", "--models", tiny_models,
            "--out", tmp_path / "first", "--json")
    assert r.exit_code == 0, r.stderr
    record = json.loads(r.stdout)["record"]["id"]
    for args in (["claim", "add", "tiny-cpu", "--value", "400", "--metric",
                  "median 99/(t[99]-t[0])", "--by", "lab", "--model", "tiny-llama",
                  "--quantization", "bfloat16", "--engine", "vllm", "--tp", "1"],
                 ["claim", "advance", "tiny-cpu", "--to", "queued", "--record", record]):
        r = cli(*args)
        assert r.exit_code == 0, r.stderr
    add_remote(lead, "origin", str(tmp_path / "remote"))
    create_remote(get_remote(lead, "origin"))
    push(lead, get_remote(lead, "origin"))
    fleet = Fleet(url=url, root=tmp_path, keys=tmp_path / "keys", keyid=key.keyid,
                  remote=tmp_path / "remote", lead=lead.root, record=record,
                  models=tiny_models, env={})
    r = cli("queue", "add", "tiny-cpu", "--hardware", "test-cpu", "--json")
    assert r.exit_code == 0, r.stderr
    job = json.loads(r.stdout)
    host = fleet.home("bench-host")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(REGISTRY_HOME=str(host), REGISTRY_KEYS_DIR=str(tmp_path / "keys"),
               REGISTRY_QUEUE_URL=url, REGISTRY_FLEET_HARDWARE="test-cpu",
               PYTHONPATH=str(ROOT))
    policy = tmp_path / "policy.toml"  # the lab's rules, a reserve a CI disk can keep
    policy.write_text(f'reserve_gib = 1.0\nlane_lock = "{tmp_path}/lane.lock"\n'
                      f'hold_file = "{tmp_path}/held.json"\n[stop]\n'
                      f'pid_dir = "{tmp_path}/engines"\n')
    done = subprocess.run([sys.executable, "-m", "registry", "worker", "--once", "--json",
                           "--models", str(tiny_models), "--work-dir", str(tmp_path / "runs"),
                           "--name", "bench-host", "--policy", str(policy)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["jobs"] == [job["id"]]
    [j] = list_jobs(url).jobs
    assert j.state.value == "done" and j.pushed, (j.reason, j.log)
    [new] = j.records
    [attestation] = j.attestations
    assert j.claim_moves[0] == "tiny-cpu -> reproducing", j.claim_moves
    reader = home_at(fleet.home("reader"))  # another home, after a pull
    assert new in {x.id for x in find_records(reader)}
    assert [v.id for v in verifications_of(reader, new)] == [attestation]
    final = j.claim_moves[-1]
    expected = final.split(" -> ")[1] if " -> " in final else "reproducing"
    assert show_claim(reader, "tiny-cpu").status == expected, j.claim_moves
