"""The lab's host policy on a real engine: a llama-server (tools/llama_server.sh, the
tiny Llama as Q8_0 GGUF) reproducing a sealed llama.cpp record under `registry worker`
is killed with SIGKILL mid-suite. Under the default policy the job gets one run, its run
directory keeps the evidence, one probe runs, the job fails with the reason, the host
is held, and no second start happens (a second job stays queued)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from registry.engines.llamacpp.server import cached_build
from tests.conftest import ROOT
from tests.fleet_team import Fleet

pytestmark = [pytest.mark.llamacpp, pytest.mark.postgres, pytest.mark.skipif(
    not cached_build().is_file() and not os.environ.get("REGISTRY_REQUIRE_LLAMA_CPP"),
    reason="no llama-server build: run tools/llama_server.sh")]


def test_a_killed_llama_server_gets_one_run_one_probe_and_holds_the_host(
        tmp_path, tiny_models, postgres_server, monkeypatch, cli) -> None:
    import psycopg

    from registry.fleet.queue import Kind, add_job, list_jobs
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis
    from registry.team.remotes import add_remote, get_remote
    from registry.team.sync import create_remote, push

    subprocess.run([sys.executable, str(ROOT / "tools" / "tiny_gguf.py"), "--models",
                    str(tiny_models), "--llama-cpp", str(cached_build().parent.parent)],
                   check=True, capture_output=True)
    name = f"q{uuid.uuid4().hex[:12]}"
    admin = postgres_server.format(db="postgres").replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    url = postgres_server.format(db=name).replace("+psycopg", "")
    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    key = create_key(tmp_path / "keys")
    lead = init_home(tmp_path / "lead" / ".registry")
    genesis(lead, signing_key(tmp_path / "keys"))
    monkeypatch.setenv("REGISTRY_HOME", str(lead.root))
    r = cli("run", ROOT / "recipes/tiny-llamacpp-f16-kv.toml", "--models", tiny_models,
            "--out", tmp_path / "first", "--json")
    assert r.exit_code == 0, r.stderr
    record = json.loads(r.stdout)["record"]["id"]
    add_remote(lead, "origin", str(tmp_path / "remote"))
    create_remote(get_remote(lead, "origin"))
    push(lead, get_remote(lead, "origin"))
    fleet = Fleet(url=url, root=tmp_path, keys=tmp_path / "keys", keyid=key.keyid,
                  remote=tmp_path / "remote", lead=lead.root, record=record,
                  models=tiny_models, env={})
    first, second = (add_job(url, Kind.reproduce, record, "test-cpu").id for _ in range(2))
    host = fleet.home("bench-host")
    engines = tmp_path / "engines"
    policy = tmp_path / "policy.toml"  # the lab's rules, a reserve a CI disk can keep
    policy.write_text(f'reserve_gib = 1.0\nlane_lock = "{tmp_path}/lane.lock"\n'
                      f'hold_file = "{tmp_path}/held.json"\n[stop]\npid_dir = "{engines}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(REGISTRY_HOME=str(host), REGISTRY_KEYS_DIR=str(tmp_path / "keys"),
               REGISTRY_QUEUE_URL=url, REGISTRY_FLEET_HARDWARE="test-cpu",
               REGISTRY_FLEET_PAUSE_AT="suite:5", PYTHONPATH=str(ROOT))
    worker = subprocess.Popen(
        [sys.executable, "-m", "registry", "worker", "--json", "--models", str(tiny_models),
         "--work-dir", str(tmp_path / "runs"), "--name", "bench-host", "--policy", str(policy)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list(engines.glob("engine-*.json")) or \
            list_jobs(url).jobs[0].phase != "suite":
        assert time.monotonic() < deadline and worker.poll() is None, "no suite"
        time.sleep(0.2)
    [pid_file] = engines.glob("engine-*.json")
    server = json.loads(pid_file.read_text())["pid"]
    assert "llama-server" in Path(f"/proc/{server}/cmdline").read_text()
    os.kill(server, signal.SIGKILL)  # the engine crashes mid-run
    out, err = worker.communicate(timeout=300)
    assert worker.returncode == 0, err[-3000:]
    report = json.loads(out)
    jobs = {j.id: j for j in list_jobs(url).jobs}
    j = jobs[first]
    assert report["jobs"] == [first] and report["failed"] == [first] and report["held"]
    assert j.state.value == "failed" and j.attempts == 1, (j.state, j.reason)
    assert j.reason and j.reason.startswith(
        "engine fault, not retried (host policy): the engine exited (code -9) during the "
        "suite"), j.reason
    assert "health probe" in j.reason and jobs[second].state.value == "queued"
    assert "kernel log: " in j.reason
    kept = json.loads((tmp_path / "runs" / f"job-{first}-probe.json").read_text())
    assert kept["kernel_log"]["note"]  # its lines, or why they were not readable
    run_dir = tmp_path / "runs" / f"job-{first}-attempt-1"
    assert json.loads((run_dir / "status.json").read_text())["state"] == "failed"
    assert "llama" in (run_dir / "server.log").read_text()  # the evidence, kept
    assert json.loads((tmp_path / "held.json").read_text())["job"] == first
    assert not list(engines.glob("engine-*.json"))  # nothing of it is left running
