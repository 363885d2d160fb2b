"""A package's closure, checked as a stranger would before running it: offline, that
everything it names is in it or pinned (each file re-hashed, the model at a 40-hex
revision with its manifest digest, every upstream at a full commit, every asset with
size and sha256, a container image by digest), that no host path is in any of its
text, that the five commands are there, and that its signature holds; `--remote`, that
each asset and upstream can still be fetched and is what the package says (a tampered
asset, a moved tag, a lost file each fail).

The guide class (the lab's `repro/guide-catalog.json` words) is derived from which gates
hold, with the `missing` gates that keep the package from the next class: never typed.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import Field, ValidationError

from registry.base.canonical import is_git_sha, is_sha256
from registry.base.confine import inside
from registry.base.model import Frozen, empty_list
from registry.base.safeload import loads_json
from registry.errors import InvalidInput
from registry.publish.package import (
    COMMANDS,
    MANIFEST,
    PAYLOAD_TYPE,
    SCHEMA,
    SIGNATURE,
    Finding,
    Package,
)

HOST_PATH = re.compile(
    r"(?<![\w.$}])(/home/[^/\s\"']+/|/Users/[^/\s\"']+/|/root/|/mnt/|/media/[^/\s\"']+/"
    r"|/tmp/|/var/folders/|[A-Za-z]:\\\\?Users\\\\?)")
IMAGE = re.compile(r"@sha256:[0-9a-f]{64}$")
FETCH_LIMIT = 1 << 30  # an asset larger than this is not fetched whole to check it


class Closure(Frozen):
    path: str
    passed: bool
    findings: list[Finding] = Field(default_factory=empty_list)
    guide_class: str
    missing: list[str] = Field(default_factory=empty_list,
                               description="gates between this class and the next")
    remote_verified_at: str | None = None


def host_paths(text: str) -> list[tuple[int, str]]:
    """(line number, the matched path prefix) of every host path in `text`."""
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1)
            for m in HOST_PATH.finditer(line)]


def check_package(folder: Path, *, remote: bool = False,
                  trusted: dict[str, Ed25519PublicKey] | None = None) -> Closure:
    """Check the package in `folder`; `trusted` maps key ids to public keys the checker
    trusts (a home's keyring), else the signature is reported as unverifiable."""
    package, findings = _load(folder)
    if package is None:
        return Closure(path=str(folder), passed=False, findings=findings,
                       guide_class="archived", missing=["a readable package.json"])
    findings += _signature(folder, trusted)
    findings += _files(folder, package)
    findings += _pins(package)
    findings += [Finding(code="host_path", detail=f"{name}:{line}: {text}")
                 for name, line, text in _texts(folder)]
    when = None
    if remote:
        from registry.publish.remote import check_remote

        remote_findings = check_remote(package)
        findings += remote_findings
        if not remote_findings:
            when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    guide, missing = guide_class(package, findings, remote_verified=when is not None)
    failed = [f for f in findings if f.code != "signature_unverifiable"]
    return Closure(path=str(folder), passed=not failed, findings=findings,
                   guide_class=guide, missing=missing, remote_verified_at=when)


def _load(folder: Path) -> tuple[Package | None, list[Finding]]:
    try:
        data = (folder / MANIFEST).read_bytes()
    except OSError as e:
        raise InvalidInput(f"{folder / MANIFEST}: {e.strerror or 'cannot read'}",
                           hint="give the folder `registry publish` wrote") from None
    try:
        raw = loads_json(data)
    except ValueError as e:
        return None, [Finding(code="manifest_invalid", detail=f"{MANIFEST}: {e}")]
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        return None, [Finding(code="schema_mismatch", detail=f"{MANIFEST}: not {SCHEMA}")]
    try:
        return Package.model_validate(raw), []
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, [Finding(code="manifest_invalid", detail=f"{where}: {first['msg']}")]


def _signature(folder: Path, trusted: dict[str, Ed25519PublicKey] | None) -> list[Finding]:
    from registry.errors import RegistryError
    from registry.signing.dsse import parse_envelope, verify

    try:
        envelope = parse_envelope((folder / SIGNATURE).read_bytes())
    except OSError:
        return [Finding(code="signature_missing", detail=f"no {SIGNATURE}")]
    except RegistryError as e:
        return [Finding(code="signature_invalid", detail=e.message)]
    if envelope.payloadType != PAYLOAD_TYPE or \
            envelope.payload_bytes() != (folder / MANIFEST).read_bytes():
        return [Finding(code="signature_invalid",
                        detail=f"{SIGNATURE} does not sign this {MANIFEST}")]
    if trusted is None:
        return [Finding(code="signature_unverifiable",
                        detail="no keyring to check the publisher's key against")]
    try:
        verify(envelope, trusted)
    except RegistryError as e:
        return [Finding(code="signature_invalid", detail=e.message)]
    return []


def _files(folder: Path, package: Package) -> list[Finding]:
    out = []
    for pin in [package.recipe, *package.suites, *package.engine.patches,
                *([package.launcher] if package.launcher else [])]:
        try:
            path = inside(folder, pin.path)
        except InvalidInput:
            out.append(Finding(code="path_outside_package", detail=pin.path))
            continue
        if not path.is_file():
            out.append(Finding(code="file_missing", detail=pin.path))
        elif hashlib.sha256(path.read_bytes()).hexdigest() != pin.sha256:
            out.append(Finding(code="file_hash_mismatch", detail=pin.path))
    return out


def _pins(package: Package) -> list[Finding]:
    out: list[Finding] = []

    def need(ok: bool, code: str, detail: str) -> None:
        if not ok:
            out.append(Finding(code=code, detail=detail))

    m = package.model
    need(bool(m.revision and is_git_sha(m.revision)), "model_revision_unpinned",
         f"model revision {m.revision!r} is not a 40-hex commit" if m.revision
         else "the model names no revision (a 40-hex commit)")
    need(bool(m.manifest_sha256 and is_sha256(m.manifest_sha256)), "model_manifest_missing",
         "the model's release files have no manifest digest")
    source = package.engine.source
    need(bool(source and source.commit and is_git_sha(source.commit)),
         "engine_source_unpinned", f"engine {package.engine.name} "
         f"{package.engine.version or ''} is not at a full source commit".replace("  ", " "))
    need(bool(source and source.url), "engine_source_url_missing",
         "no URL to fetch the engine source from")
    if package.container:
        need(bool(IMAGE.search(package.container.image)), "container_image_unpinned",
             f"image {package.container.image!r} is not pinned by digest")
    for asset in package.assets:
        need(asset.size > 0 and is_sha256(asset.sha256) and
             asset.url.endswith("/" + asset.name), "asset_incomplete", asset.name)
    need(sorted(package.commands) == sorted(COMMANDS), "commands_not_five",
         f"commands {sorted(package.commands)}; a package has exactly {', '.join(COMMANDS)}")
    need(bool(package.figures), "figures_missing", "no figure to re-run against")
    for profile in package.profiles:
        xs = [p.x for p in profile.points]
        need(xs == sorted(set(xs)) and len(xs) >= 2, "profile_invalid",
             f"{profile.metric} over {profile.x_metric.value}: x {xs} must be at least two "
             "unique ascending measured points")
    return out


def _texts(folder: Path) -> list[tuple[str, int, str]]:
    """Host paths in every text file of the package; not in `run/`, where its launch
    command writes (a run names its host; it is no part of the package)."""
    from registry.base.confine import regular_files

    found = []
    for path in regular_files(folder):
        if path.relative_to(folder.resolve()).parts[0] == "run":
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        found += [(path.relative_to(folder.resolve()).as_posix(), n, t)
                  for n, t in host_paths(text)]
    return found


GUIDE_CLASSES = ("record-capsule", "lab-replay", "candidate-portable-repro", "starter-guide")


def guide_class(package: Package, findings: list[Finding], *, remote_verified: bool
                ) -> tuple[str, list[str]]:
    """The highest class whose gates hold, and what the next one needs."""
    codes = {f.code for f in findings}
    runnable = not codes & {"file_missing", "file_hash_mismatch", "path_outside_package",
                            "commands_not_five", "signature_invalid", "signature_missing"}
    pinned = not codes & {"model_revision_unpinned", "model_manifest_missing",
                          "engine_source_unpinned", "engine_source_url_missing",
                          "container_image_unpinned", "asset_incomplete", "host_path"}
    promoted = bool(package.promotion and package.promotion.promoted)
    gates = [
        ("runnable from the package's own files", runnable),
        ("every input pinned, no host path", pinned),
        ("promoted, every upstream fetched again", promoted and remote_verified),
    ]
    reached = 0
    for _, holds in gates:
        if not holds:
            break
        reached += 1
    missing = [name for name, holds in gates[reached:reached + 1] if not holds]
    if reached < len(gates):
        missing += [c for c in sorted(codes) if c != "signature_unverifiable"][:6]
    return GUIDE_CLASSES[reached], missing
