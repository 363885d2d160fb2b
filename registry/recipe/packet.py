"""A container packet (a lab's `compose.yaml`) checked the way the lab's
tools/check-container-packet.py (@0eed942b) checks it, plus the owner's memory rule, and
held against a recipe: a packet that contradicts its recipe is a mismatch.

Each finding says whose rule it is (`source`):

- `lab`, the lab checker's rules, followed as it writes them: the profiles `one-gpu` and
  `two-gpu` (`two-gpu` alone where package.json's `container_packet.profiles` names only
  it), no other service; per service the image pinned by digest, the model mounted
  read-only at /model, every port on 127.0.0.1, the environment the launcher always
  forwards (less the names its wrapper sets itself), `--no-enable-prefix-caching`; the
  two profiles differ only in `ZE_AFFINITY_MASK` and `ONEAPI_DEVICE_SELECTOR` and in
  `--tensor-parallel-size` (1 and 2).
- `host`, the owner's host rule the lab's checker does not check: swap equal to memory
  (`memswap_limit` = `mem_limit`; compose's `memswap_limit` is memory plus swap, so 20g
  over 12g lets the engine swap 8 GiB). Every lab packet in the index writes 12g/20g.
- `recipe`: against a recipe with `[engine.container]`, the same digest, memory, swap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.recipe.schema import Recipe

MAX_BYTES = 4_000_000
UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
SIZE_RE = re.compile(r"^([0-9]+)\s*([bkmgt]?)b?$", re.IGNORECASE)


PROFILES = ("one-gpu", "two-gpu")
DEVICE_SELECTION = {"ZE_AFFINITY_MASK", "ONEAPI_DEVICE_SELECTOR"}
TP = "--tensor-parallel-size"
# Set by the lab's wrapper's `env` prologue, not passed through to the container.
NOT_FORWARDED = frozenset({
    "IMAGE", "EXPECTED_IMAGE_ID", "EXPECTED_KERNEL_HEAD", "GPU_MEMORY_UTILIZATION",
    "ENFORCE_EAGER", "COMPILATION_CONFIG", "VLLM_USE_V2_MODEL_RUNNER"})


class Finding(Frozen):
    service: str | None = Field(None, description="the service, or none for the packet")
    rule: str = Field(description="profiles | pinned-image | read-only-model | loopback-port "
                                  "| launcher-env | prefix-cache | profile-drift | swap | recipe")
    source: str = Field("lab", description="whose rule: lab (its checker) | host (the owner's "
                                           "host rules) | recipe")
    message: str


class PacketCheck(Frozen):
    path: str
    services: list[str]
    profiles: list[str] = Field(default_factory=list, description="the profiles expected")
    findings: list[Finding] = Field(default_factory=list)

    @property
    def lab_ok(self) -> bool:
        """Every rule of the lab's own checker holds."""
        return bool(self.services) and not any(f.source == "lab" for f in self.findings)

    @property
    def ok(self) -> bool:
        return bool(self.services) and not self.findings


def size_bytes(value: Any) -> int | None:
    """`12g`, `12G`, `512m`, a byte count: bytes (None: not a size)."""
    match = SIZE_RE.match(str(value).strip())
    return int(match[1]) * UNITS[match[2].lower()] if match else None


def load_compose(path: Path) -> dict[str, Any]:
    import yaml  # type: ignore[import-untyped]  # PyYAML: a dependency of gguf

    file = path / "compose.yaml" if path.is_dir() else path
    try:
        data = file.read_bytes()
    except OSError as e:
        raise InvalidInput(f"{file}: cannot read ({e.strerror})") from None
    if len(data) > MAX_BYTES:
        raise InvalidInput(f"{file}: {len(data):,} bytes is not a compose file")
    try:
        doc = yaml.safe_load(data)  # safe_load: no object tags; anchors and merges only
    except yaml.YAMLError as e:
        raise InvalidInput(f"{file}: not YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict):
        raise InvalidInput(f"{file}: no `services` mapping: not a compose file")
    return doc


def check_packet(path: Path, recipe: Recipe | None = None,
                 launcher_env: set[str] | frozenset[str] = frozenset(),
                 profiles: tuple[str, ...] | None = None) -> PacketCheck:
    """`profiles`: the profiles expected (default: package.json beside compose.yaml
    says, as the lab's checker reads it; else both)."""
    doc = load_compose(path)
    services = {str(k): v for k, v in doc["services"].items() if isinstance(v, dict)}
    expected = profiles or expected_profiles(path)
    findings = _profiles(services, expected)
    if not findings:  # the lab's checker stops at a wrong set of profiles
        for name, svc in services.items():
            findings += _service(name, svc, launcher_env - NOT_FORWARDED)
        findings += _drift(services)
    for name, svc in services.items():
        findings += _swap(name, svc)
        if recipe is not None:
            findings += _against(name, svc, recipe)
    return PacketCheck(path=str(path), services=sorted(services), profiles=list(expected),
                       findings=findings)


def expected_profiles(path: Path) -> tuple[str, ...]:
    """`two-gpu` alone where the packet's package.json lists only it; else both (an
    unreadable package.json counts as none, as in the lab's checker)."""
    import json

    meta = (path if path.is_dir() else path.parent) / "package.json"
    try:
        doc = json.loads(meta.read_bytes()[:MAX_BYTES * 4])
        declared = (doc.get("container_packet") or {}).get("profiles") or {}
        return ("two-gpu",) if set(declared) == {"two-gpu"} else PROFILES
    except (OSError, ValueError, AttributeError, TypeError):
        return PROFILES


def _profiles(services: dict[str, Any], expected: tuple[str, ...]) -> list[Finding]:
    out = [Finding(rule="profiles", message=f"compose.yaml has no {name} service")
           for name in expected if name not in services]
    out += [Finding(service=name, rule="profiles",
                    message=f"compose.yaml has an undeclared {name} service")
            for name in services if name not in expected]
    return out


def _arg(cmd: list[str], flag: str) -> str | None:
    return cmd[cmd.index(flag) + 1] if flag in cmd and cmd.index(flag) + 1 < len(cmd) else None


def _drift(services: dict[str, Any]) -> list[Finding]:
    """The profiles differ only in device selection and tensor parallel size."""
    cmds = {n: [str(c) for c in s.get("command") or []] for n, s in services.items()}
    out = [Finding(service=name, rule="profile-drift",
                   message=f"tensor parallel size is {_arg(cmds[name], TP)!r}, not {want}")
           for name, want in (("one-gpu", "1"), ("two-gpu", "2"))
           if name in cmds and _arg(cmds[name], TP) != want]
    if "one-gpu" not in services or "two-gpu" not in services:
        return out
    one, two = (dict(services[n].get("environment") or {}) for n in PROFILES)
    differing = {k for k in set(one) | set(two) if one.get(k) != two.get(k)}
    if differing != DEVICE_SELECTION:
        out.append(Finding(rule="profile-drift", message=(
            f"the two profiles should differ only in device selection, but differ in "
            f"{sorted(differing)}")))
    normal = {}
    for name in PROFILES:
        cmd = list(cmds[name])
        if _arg(cmd, TP) is not None:  # only this flag's value may differ
            cmd[cmd.index(TP) + 1] = "<tensor-parallel-size>"
        normal[name] = cmd
    if normal["one-gpu"] != normal["two-gpu"]:
        out.append(Finding(rule="profile-drift",
                           message="serving arguments differ beyond tensor parallel size"))
    return out


def _service(name: str, svc: dict[str, Any], launcher_env: set[str] | frozenset[str]
             ) -> list[Finding]:
    out = []
    image = str(svc.get("image") or "")
    if not re.search(r"@sha256:[0-9a-f]{64}$", image):
        out.append(Finding(service=name, rule="pinned-image",
                           message=f"image is not pinned by digest: {image!r}"))
    volumes = [str(v) for v in svc.get("volumes") or []]
    if not any(v.endswith(":/model:ro") for v in volumes):
        out.append(Finding(service=name, rule="read-only-model",
                           message="the model is not mounted read-only at /model"))
    for port in svc.get("ports") or []:
        if not str(port).startswith("127.0.0.1:"):
            out.append(Finding(service=name, rule="loopback-port",
                               message=f"port {port!r} is not bound to loopback"))
    env = svc.get("environment") or {}
    names = set(env) if isinstance(env, dict) else {str(e).split("=", 1)[0] for e in env}
    missing = sorted(launcher_env - names)
    if missing:
        out.append(Finding(service=name, rule="launcher-env", message=(
            f"{len(missing)} variable(s) the launcher always forwards are missing: "
            f"{missing[:6]}")))
    command = [str(c) for c in svc.get("command") or []]
    if "--no-enable-prefix-caching" not in command:
        out.append(Finding(service=name, rule="prefix-cache", message=(
            "prefix caching is not disabled (--no-enable-prefix-caching): results would "
            "not be cache-zero")))
    return out


def _swap(name: str, svc: dict[str, Any]) -> list[Finding]:
    mem, swap = svc.get("mem_limit"), svc.get("memswap_limit")
    if mem is None:
        return [Finding(service=name, rule="swap", source="host",
                        message="no mem_limit: memory is unbounded")]
    m, s = size_bytes(mem), size_bytes(swap) if swap is not None else None
    if m is None or (swap is not None and s is None):
        return [Finding(service=name, rule="swap", source="host",
                        message=f"unreadable limits: mem_limit {mem!r}, memswap_limit {swap!r}")]
    if s != m:
        return [Finding(service=name, rule="swap", source="host", message=(
            f"memswap_limit {swap} is not mem_limit {mem}: the engine may swap "
            f"{'an unbounded amount' if s is None else f'{(s - m) / 1024**3:g} GiB'} "
            "(the host rules: swap equal to memory)"))]
    return []


def _against(name: str, svc: dict[str, Any], recipe: Recipe) -> list[Finding]:
    spec = recipe.engine.container
    if spec is None:
        return [Finding(service=name, rule="recipe", source="recipe",
                        message=f"recipe {recipe.name} has no [engine.container]")]
    out = []
    image = str(svc.get("image") or "")
    if image != spec.image:
        out.append(Finding(service=name, rule="recipe", source="recipe",
                           message=f"image {image!r}, the recipe's {spec.image!r}"))
    for key, want in (("mem_limit", spec.memory), ("memswap_limit", spec.memory_swap)):
        got = svc.get(key)
        if size_bytes(got) != (size_bytes(want) if want else None):
            out.append(Finding(service=name, rule="recipe", source="recipe",
                               message=f"{key} {got!r}, the recipe's {want!r}"))
    return out


ENV_RE = re.compile(r"--env\s+\"?([A-Z_][A-Z0-9_]*)=")
IF_RE = re.compile(r"(?:^|;|\s)if(?=\s|$)")
FI_RE = re.compile(r"(?:^|;|\s)fi(?=\s|;|$)")


def forwarded_env(launcher: Path) -> set[str]:
    """The variables a launcher forwards unconditionally (`--env NAME=` outside any
    `if`/`fi`, depth balanced per line as the lab's checker counts it)."""
    names: set[str] = set()
    depth = 0
    for line in launcher.read_text(encoding="utf-8", errors="replace").splitlines():
        code = line.split("#", 1)[0]
        opened, closed = len(IF_RE.findall(code)), len(FI_RE.findall(code))
        if depth == 0 and opened == 0:
            names |= set(ENV_RE.findall(line))
        depth = max(0, depth + opened - closed)
    return names
