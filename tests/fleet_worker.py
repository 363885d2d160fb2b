"""One fleet worker as its own process, on the scripted engine (tests/test_fleet*.py).

`python -m tests.fleet_worker OPTIONS_JSON`: the options of registry.fleet.worker.serve
(the library function `registry worker` calls), its home from $REGISTRY_HOME, the
hardware identity from $REGISTRY_FLEET_HARDWARE, the checkpoint folder from
$REGISTRY_MODELS. Prints the worker's report as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests/scripted_engine.py"
LOG = ROOT / "tests/data/cpu-runs/tiny-bf16-kv/server.log"


def fleet_launcher(models: Path, gap_s: float = 0.0005):  # type: ignore[no-untyped-def]
    """The scripted engine replaying a real CPU engine's log, its checkpoint path moved
    to `models` (so that the sealed model path is the one this host resolves)."""
    from registry.executor.engine import Engine

    log = models.parent / "scripted-server.log"
    if not log.exists():
        log.write_bytes(LOG.read_bytes().replace(b"/tmp/registry-models", str(models).encode()))

    def launch(plan, out):  # type: ignore[no-untyped-def]
        argv = ["python", str(SCRIPT), "--port", str(plan.port),
                json.dumps({"gap_s": gap_s, "log_file": str(log),
                            "ignore_term": bool(os.environ.get("FLEET_TEST_ENGINE_IGNORES_TERM"))})]
        if os.environ.get("FLEET_TEST_ENGINE_FAILS"):  # an engine that dies starting
            argv = ["python", "-c", "import sys; print('engine: out of memory'); sys.exit(3)"]
        if os.environ.get("FLEET_TEST_ENGINE_STARTS"):  # each start leaves a line there
            with open(os.environ["FLEET_TEST_ENGINE_STARTS"], "a") as starts:
                starts.write(f"{out}\n")
        if os.environ.get("FLEET_TEST_CONTAINER_IMAGE"):  # the same engine, in a container
            return _boxed(plan, out, ["/usr/bin/python3", *argv[1:]], log.parent)
        return Engine(plan.model_copy(update={"argv": argv}), out)

    return launch


def _boxed(plan, out, argv, folder):  # type: ignore[no-untyped-def]
    """The scripted engine in a real podman container (runc), the host's Python mounted
    into an empty image (tests/containers.py)."""
    import tempfile

    from registry.executor.container import ContainerEngine, container_argv, launch_of
    from registry.recipe.schema import ContainerSpec
    from tests.containers import HOST_MOUNTS, LIMITS

    spec = ContainerSpec(image=os.environ["FLEET_TEST_CONTAINER_IMAGE"],
                         oci_runtime="/usr/sbin/runc", ulimits=LIMITS,
                         mounts=[*HOST_MOUNTS, f"{ROOT}:{ROOT}:ro", f"{folder}:{folder}:ro"])
    name = f"registry-{plan.port}-fleet-test"
    cidfile = str(Path(tempfile.mkdtemp(prefix="registry-cid-")) / "container.id")
    boxed = container_argv(spec, argv, name=name, port=plan.port, env=plan.env, model=None,
                           mounts=spec.mounts, cidfile=cidfile)
    return ContainerEngine(plan.model_copy(update={
        "argv": boxed, "python": None, "container": launch_of(spec, name, cidfile)}), out)


def noop(job, ctx):  # type: ignore[no-untyped-def]
    """A job that does nothing: what is left is the queue's own cost (the benchmark)."""
    from registry.fleet.execute import Outcome

    return Outcome(records=[], attestations=[], verdict="noop", pushed=False)


def main() -> None:
    from registry.fleet.worker import WorkerOptions, serve
    from registry.store.home import find_home

    opts = WorkerOptions.model_validate_json(sys.argv[1])
    if not opts.hardware:  # as `registry worker` does: the host's devices say
        from registry.fleet.hardware import detect

        opts = opts.model_copy(update={"hardware": detect().identity})
    models = os.environ.get("REGISTRY_MODELS")
    report = serve(find_home(None), opts,
                   launcher=fleet_launcher(Path(models)) if models else None,
                   runner=noop if os.environ.get("FLEET_NOOP_JOBS") else None)
    print(json.dumps(report.model_dump(mode="json")), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
