"""The engine in a container (`[engine.container]`): the runtime's argv for a plan, the
image's identity as the runtime reports it, and the container's own stop.

The argv is built here, never a shell line: the engine's argv follows the image as the
container's command. The model is mounted read-only at its own path, so the engine's
argv and the resolver's evidence name the same file inside and out. Runtime calls are
bounded by timeouts; a runtime that is missing or fails is one clear error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from registry.errors import EngineFailed, InvalidInput
from registry.executor import orphans, runtime
from registry.executor.engine import Cleanup, Engine, EngineProcess, StopStep
from registry.formats.rundir import ContainerFacts, ContainerLaunch, LaunchPlan
from registry.recipe.schema import ContainerSpec

INSPECT_TIMEOUT_S = 60.0
CIDFILE_WAIT_S = 30.0  # the runtime writes the id when it creates the container


def labels(name: str) -> dict[str, str]:
    """The container's labels: its run, its owner (this process, with its start time,
    so that a reused pid is never taken for it), and the session of
    $REGISTRY_CONTAINER_SESSION where set (a CI run finds its own leftovers by it)."""
    me = os.getpid()
    found = {runtime.RUN_LABEL: name, runtime.OWNER_LABEL: f"{me}:{orphans.start_time(me)}"}
    session = os.environ.get(runtime.SESSION_ENV)
    if session and re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", session):
        found[runtime.SESSION_LABEL] = session
    return found


def container_argv(spec: ContainerSpec, engine_argv: list[str], *, name: str, port: int,
                   env: dict[str, str], model: str | None, mounts: list[str],
                   platform: str = "cpu", cidfile: str | None = None) -> list[str]:
    """`<runtime> run` for the engine's argv: the environment is passed by name only
    (`--env NAME`: the values travel in the runtime's own environment, never on its
    command line), the model read-only, the port on loopback, the platform's devices
    (XPU: /dev/dri and group render; CUDA: the NVIDIA runtime) unless the recipe names
    its own; labelled with its run and owner, its id written to `cidfile`."""
    argv = [spec.runtime, "run", "--rm", "--name", name]
    for key, value in labels(name).items():
        argv += ["--label", f"{key}={value}"]
    if cidfile:
        argv += ["--cidfile", cidfile]
    if spec.oci_runtime:
        argv += ["--runtime", spec.oci_runtime]
    for limit, value in sorted(spec.ulimits.items()):
        argv += ["--ulimit", f"{limit}={value}"]
    if spec.network == "host":
        argv.append("--network=host")
    else:
        argv += ["--publish", f"127.0.0.1:{port}:{port}"]
    if spec.memory:
        argv += ["--memory", spec.memory, "--memory-swap", spec.memory_swap or spec.memory]
    devices, groups = spec.devices, spec.group_add
    if platform == "xpu":
        devices, groups = devices or ["/dev/dri"], groups or ["render"]
    for device in devices:
        argv += ["--device", device]
    for group in groups:
        argv += ["--group-add", group]
    gpus = spec.gpus or ("all" if platform == "cuda" else None)
    if gpus and spec.runtime == "docker":
        argv += ["--gpus", gpus]
    elif gpus:  # podman reaches NVIDIA GPUs through CDI (nvidia-ctk cdi generate)
        argv += ["--device", f"nvidia.com/gpu={gpus.removeprefix('device=')}"]
    if model:
        argv += ["--volume", f"{model}:{model}:ro"]
    for mount in mounts:
        argv += ["--volume", mount]
    for key in sorted(env):
        argv += ["--env", key]
    return [*argv, spec.image, *engine_argv]


def launch_of(spec: ContainerSpec, name: str, cidfile: str | None = None) -> ContainerLaunch:
    return ContainerLaunch(runtime=spec.runtime, image=spec.image, name=name, pinned=spec.pinned,
                           cidfile=cidfile)


def _runtime(runtime: str) -> str:
    found = shutil.which(runtime)
    if found is None:
        raise InvalidInput(f"engine.container.runtime {runtime!r}: not installed here",
                           hint="install it (Debian: apt-get install podman runc)")
    return found


def _call(argv: list[str], what: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSPECT_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EngineFailed(f"{what}: no answer in {INSPECT_TIMEOUT_S:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1][:300]
        raise InvalidInput(f"{what} failed: {last}",
                           hint="build or load the image first (docs/containers.md)")
    return done.stdout


def inspect_image(launch: ContainerLaunch) -> ContainerFacts:
    """The image's digest, id and created time and the runtime's version, asked of the
    runtime before the start (an image it lacks is refused here, before anything runs)."""
    runtime = _runtime(launch.runtime)
    version = _call([runtime, "--version"], f"{launch.runtime} --version").strip()
    out = _call([runtime, "image", "inspect", launch.image], f"{launch.runtime} image inspect")
    try:
        found = json.loads(out)
        image = found[0] if isinstance(found, list) else found
        if not isinstance(image, dict):
            raise TypeError(type(image).__name__)
        image_id = str(image["Id"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise EngineFailed(f"{launch.runtime} image inspect {launch.image}: unreadable answer"
                           ) from None
    digest = image.get("Digest") or _repo_digest(image.get("RepoDigests"))
    return ContainerFacts(runtime=launch.runtime, runtime_version=version[:200],
                          image=launch.image, image_digest=str(digest) if digest else None,
                          image_id=image_id if ":" in image_id else f"sha256:{image_id}",
                          image_created=str(image.get("Created") or "") or None, name=launch.name)


def _repo_digest(digests: object) -> str | None:
    if isinstance(digests, list):
        for item in digests:
            if isinstance(item, str) and "@" in item:
                return item.rsplit("@", 1)[1]
    return None


def check_digest(facts: ContainerFacts) -> None:
    """The image the runtime has must be the one the recipe pins."""
    if "@" not in facts.image:
        return
    want = facts.image.rsplit("@", 1)[1]
    if facts.image_digest != want:
        raise InvalidInput(f"engine.container.image pins {want} but the runtime's image has "
                           f"digest {facts.image_digest}",
                           hint="load the pinned image, or pin the digest you mean")


class ContainerEngine(Engine):
    """The engine process is `<runtime> run`; its container's id (from `--cidfile`) joins
    the engine's pid file, so that the next worker on the host stops the container of a
    worker killed with -9 (registry/executor/orphans.py). The stop goes through the
    runtime first (by id, under the host's policy: registry/executor/runtime.py), then
    the usual teardown of the runtime's own process; the runtime's steps lead
    `cleanup.steps`."""

    def __init__(self, launch: LaunchPlan, log_path: Path) -> None:
        super().__init__(launch, log_path)
        self.container_id: str | None = None

    def start(self) -> None:
        super().start()
        box = self.plan.container
        if box is None or self.proc is None:
            return
        self._register(None)  # by its exact name until the runtime has written the id
        deadline = time.monotonic() + CIDFILE_WAIT_S
        while self.proc.poll() is None and time.monotonic() < deadline:
            cid = _read_cid(box.cidfile)
            if cid:
                self.container_id = cid
                self._register(cid)
                return
            time.sleep(0.1)

    def _register(self, cid: str | None) -> None:
        assert self.proc is not None and self.plan.container is not None
        box = self.plan.container
        orphans.register(self.policy.pid_dir, self.proc.pid, str(self.log_path),
                         container={"runtime": box.runtime, "name": box.name, "id": cid})

    def stop(self) -> Cleanup:
        box = self.plan.container
        if self.proc is None or self.cleanup is not None or box is None:
            return super().stop()
        at = time.monotonic()
        ref = self.container_id or box.name
        steps, gone = runtime.stop(box.runtime, ref, self.policy.grace_s, self.policy.kill)
        offset = time.monotonic() - at  # the process's teardown's times follow the runtime's
        cleanup = super().stop()
        first = StopStep(step=f"{box.runtime} stop", at_s=0.0, gone=gone,
                         detail="; ".join(steps) or "not running")
        later = [s.model_copy(update={"at_s": round(s.at_s + offset, 3)})
                 for s in cleanup.steps]
        stopped_by = cleanup.stopped_by if cleanup.steps else f"{box.runtime} stop"
        if any("--signal SIGKILL" in step for step in steps):
            stopped_by = "KILL container"  # a hard kill, as the host policy counts them
        self.cleanup = cleanup.model_copy(update={
            "steps": [first, *later], "seconds": round(time.monotonic() - at, 3),
            "stopped_by": stopped_by if gone else "left running"})
        return self.cleanup


def _read_cid(path: str | None) -> str | None:
    if not path:
        return None
    try:
        cid = Path(path).read_text().strip()
    except OSError:
        return None
    return cid if re.fullmatch(r"[0-9a-f]{12,64}", cid) else None


def engine_for_plan(launch: LaunchPlan, log_path: Path) -> EngineProcess:
    """The default engine maker: a container's plan gets its runtime's stop."""
    return ContainerEngine(launch, log_path) if launch.container else Engine(launch, log_path)
