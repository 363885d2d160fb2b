"""The engine in a container (`[engine.container]`): the runtime's argv for a plan, the
image's identity as the runtime reports it, and the container's own stop.

The argv is built here, never a shell line: the engine's argv follows the image as the
container's command. The model is mounted read-only at its own path, so the engine's
argv and the resolver's evidence name the same file inside and out. Runtime calls are
bounded by timeouts; a runtime that is missing or fails is one clear error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from registry.errors import EngineFailed, InvalidInput
from registry.executor.engine import Cleanup, Engine, EngineProcess
from registry.formats.rundir import ContainerFacts, ContainerLaunch, LaunchPlan
from registry.recipe.schema import ContainerSpec

INSPECT_TIMEOUT_S = 60.0
STOP_GRACE_S = 20


def container_argv(spec: ContainerSpec, engine_argv: list[str], *, name: str, port: int,
                   env: dict[str, str], model: str | None, mounts: list[str],
                   platform: str = "cpu") -> list[str]:
    """`<runtime> run` for the engine's argv: the environment is passed by name only
    (`--env NAME`: the values travel in the runtime's own environment, never on its
    command line), the model read-only, the port on loopback, the platform's devices
    (XPU: /dev/dri and group render; CUDA: the NVIDIA runtime) unless the recipe names
    its own."""
    argv = [spec.runtime, "run", "--rm", "--name", name]
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


def launch_of(spec: ContainerSpec, name: str) -> ContainerLaunch:
    return ContainerLaunch(runtime=spec.runtime, image=spec.image, name=name, pinned=spec.pinned)


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


def stop_container(launch: ContainerLaunch, grace_s: int = STOP_GRACE_S) -> str | None:
    """`<runtime> stop --time N NAME`: the runtime signals the engine inside and removes
    the container (`--rm`); a container already gone is fine. Returns the runtime's
    complaint, if any (the engine keeps it as `stop_note`; the teardown that follows
    still checks the port and the runtime's processes)."""
    runtime = shutil.which(launch.runtime)
    if runtime is None:
        return f"{launch.runtime} not found: container {launch.name} not stopped"
    try:
        done = subprocess.run([runtime, "stop", "--time", str(grace_s), launch.name],
                              capture_output=True, text=True, timeout=grace_s + 30,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"{launch.runtime} stop {launch.name}: no answer"
    gone = "no such container" in done.stderr.lower() or "no container with" in done.stderr.lower()
    return None if done.returncode == 0 or gone else done.stderr.strip()[:300]


class ContainerEngine(Engine):
    """The engine process is `<runtime> run`; its stop goes through the runtime first
    (`<runtime> stop`: the engine inside gets its signal and grace), then the usual
    teardown of the runtime's own process."""

    def __init__(self, launch: LaunchPlan, log_path: Path) -> None:
        super().__init__(launch, log_path)
        self.stop_note: str | None = None

    def stop(self) -> Cleanup:
        if self.proc is not None and self.cleanup is None and self.plan.container:
            self.stop_note = stop_container(self.plan.container)
        return super().stop()


def engine_for_plan(launch: LaunchPlan, log_path: Path) -> EngineProcess:
    """The default engine maker: a container's plan gets its runtime's stop."""
    return ContainerEngine(launch, log_path) if launch.container else Engine(launch, log_path)
