"""A worker killed with -9 while its engine runs in a real podman container (runc): the
runtime keeps the container running when its client dies, so the engine's pid file
names the container (labelled with its run and owner) and the next worker's sweep stops
it by id, under the host policy's SIGKILL permission."""

from __future__ import annotations

import json
import time

import pytest

from registry.executor import orphans, runtime
from tests.containers import host_python_image, podman
from tests.fleet_team import Fleet
from tests.test_fleet import add_one, fleet, jobs, queue_db, wait_for  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(not podman(), reason="needs podman and runc (tools/setup.sh)")


def test_a_worker_killed_with_9_leaves_no_container(fleet: Fleet) -> None:  # noqa: F811
    image = host_python_image()
    job = add_one(fleet)
    pids = fleet.root / "host" / "engines"
    victim = fleet.start("wc", "test-a", env={
        "REGISTRY_FLEET_PAUSE_AT": "suite:120", "FLEET_TEST_CONTAINER_IMAGE": image,
        "FLEET_TEST_ENGINE_IGNORES_TERM": "1"})
    cid = None
    try:
        wait_for(lambda: jobs(fleet)[job].phase == "suite", 200, "the suite")
        [doc] = [json.loads(p.read_text()) for p in pids.glob("engine-*.json")]
        cid = doc["container"]["id"]
        assert cid and doc["container"]["name"].startswith("registry-")
        assert runtime.label("podman", cid, runtime.OWNER_LABEL) == \
            f"{doc['owner']}:{doc['owner_started']}"
        assert runtime.label("podman", cid, runtime.RUN_LABEL) == doc["container"]["name"]
        victim.kill()  # SIGKILL: no teardown of its own
        victim.wait()
        time.sleep(1)
        assert runtime.running("podman", cid)  # the runtime kept it: the owner's death did not

        # a policy without SIGKILL: asked to stop, the engine ignores it; left, reported
        [kept] = orphans.reap(pids, grace_s=1, kill=False)
        assert kept.container == cid and not kept.gone
        assert kept.steps[0] == f"podman kill --signal SIGTERM {cid}: exit 0", kept.steps
        assert runtime.running("podman", cid) and list(pids.glob("engine-*.json"))

        # the lab's default (SIGKILL allowed after the grace): stopped by id, verified gone
        [reaped] = orphans.reap(pids, grace_s=1, kill=True)
        assert reaped.container == cid and reaped.gone, reaped
        assert reaped.steps[:2] == [f"podman kill --signal SIGTERM {cid}: exit 0",
                                    f"podman kill --signal SIGKILL {cid}: exit 0"], reaped.steps
        assert not runtime.exists("podman", cid)
        assert not list(pids.glob("engine-*.json")) and orphans.reap(pids) == []
    finally:
        victim.kill()
        if cid and runtime.exists("podman", cid):
            runtime.stop("podman", cid, 1, kill=True)
