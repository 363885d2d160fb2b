"""`registry publish RECORD --out DIR`: a package a stranger can re-run
(registry/publish/package.py): the record's own recipe and suites as sealed, the model
at its revision, the engine source at its commit and each patch by sha256, the figures
with their quality and interval, the promotion that supports them, the five commands,
signed. Nothing host-specific gets in: a recipe or suite that names a host path is
refused, naming it. `registry publish --check DIR` is registry/publish/closure.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.base.canonical import canonical_bytes
from registry.contracts.sealed import carried, sealed_run
from registry.errors import InvalidInput, NotFound
from registry.formats.display import short_id
from registry.formats.record import Statement
from registry.formats.rundir import Bench
from registry.publish.contributors import contributors_of
from registry.publish.package import (
    MANIFEST,
    PAYLOAD_TYPE,
    SIGNATURE,
    EnginePin,
    ModelPin,
    Package,
    PackagedFigure,
    PackagedOutput,
    Pinned,
    PromotionRef,
    Upstream,
)
from registry.publish.profile import XMetric, profile_of
from registry.store.home import Home

# What a stranger runs, in order; registry's executor owns the server's life, so one
# `registry run` starts it, waits until healthy, measures and stops it (the lab's rule:
# no resident server), and each step says where its evidence lands.
COMMANDS = {
    "preflight": "registry publish --check .",
    "launch": 'registry run recipe.toml --models "$REGISTRY_MODELS" --out run --no-seal',
    "health": "included in launch: readiness polled before the suite "
              "(run/status.json ready_s); registry resolve run --recipe recipe.toml",
    "benchmark": "included in launch: the pinned suites once per prompt (run/bench.json); "
                 "registry seal run --recipe recipe.toml",
    "stop": "included in launch: TERM, a grace period, the port checked closed "
            "(run/status.json cleanup)",
}


def publish_record(home: Home, prefix: str, out: Path, *, promotion: str | None = None,
                   profiles: Sequence[tuple[XMetric, Sequence[str]]] = (),
                   contributors: Path | None = None, credits: Sequence[str] = ()) -> Package:
    """Write the package of record `prefix` into `out` (a new or empty folder), signed
    with this home's key; refused, writing nothing, when the record does not verify or
    carries something host-specific. `profiles`: sweeps, each an x metric and the
    records of its points (registry/publish/profile.py); `contributors`: a TOML file of
    contributors, each status derived (registry/publish/contributors.py); `credits`:
    contributors whose standing signed credit fact the package carries
    (registry/publish/credits.py)."""
    from registry.errors import VerificationFailed
    from registry.formats.record import parse_statement
    from registry.store.query import checked_statement
    from registry.store.writer import ready_signer

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInput(f"{out}: not an empty folder", hint="publish into a new folder")
    rid, check, data = checked_statement(home, prefix)
    if not check.ok:
        raise VerificationFailed(f"record {short_id(rid)} does not verify: nothing to publish")
    statement = parse_statement(data)
    keyid, key = ready_signer(home)
    files = _files(home, rid, statement)
    package = _package(home, rid, statement, files, promotion, keyid)
    from registry.publish.credits import as_contributor, standing

    credited = [] if contributors is None else contributors_of(
        home, contributors, [p.sha256 for p in package.engine.patches])
    credited += [as_contributor(standing(home, who)) for who in credits]
    package = package.model_copy(update={
        "profiles": [profile_of(home, ids, x) for x, ids in profiles],
        "contributors": credited})
    _write(out, files, package, keyid, key)
    return package


def _files(home: Home, rid: str, statement: Statement) -> dict[str, bytes]:
    """The recipe and every suite the record carries, at the paths the recipe names."""
    recipe = carried(home, statement, "recipe.toml")
    if recipe is None:
        raise NotFound(f"record {short_id(rid)} does not carry its recipe.toml: it cannot be "
                       "published as a package a stranger re-runs")
    files = {"recipe.toml": recipe}
    spec = statement.predicate.recipe or {}
    for suite in spec.get("benchmark", {}).get("suites", []):
        name, path = suite.get("name"), suite.get("path") or ""
        data = carried(home, statement, f"suites/{name}.jsonl")
        if data is None:
            raise NotFound(f"record {short_id(rid)} does not carry its suite {name!r}",
                           hint="records sealed from `registry run` carry suites/NAME.jsonl")
        if path.startswith(("/", "$")) or ".." in Path(path).parts:
            raise InvalidInput(f"recipe suite {name!r} names {path!r}: not a path inside "
                               "the package", hint="name the suite relative to the recipe")
        files[path] = data
    for source in statement.predicate.sources:  # each uncommitted change, as sealed
        if source.dirty and source.diff_artifact:
            diff = carried(home, statement, source.diff_artifact)
            if diff is None:
                raise NotFound(f"record {short_id(rid)}: its {source.role} diff is missing")
            files[_patch_path(source.role)] = diff
    for path, data in files.items():
        _no_host_path(path, data)
    return files


def _patch_path(role: str) -> str:
    return f"patches/{role}.diff"


def _no_host_path(path: str, data: bytes) -> None:
    from registry.publish.closure import host_paths

    found = host_paths(data.decode("utf-8", errors="replace"))
    if found:
        line, text = found[0]
        raise InvalidInput(f"{path}:{line}: names a host path ({text!r}); a package holds "
                           "nothing of the host it came from",
                           hint="use ${REGISTRY_MODELS} or a path relative to the recipe, "
                                "then seal again")


def _package(home: Home, rid: str, statement: Statement, files: dict[str, bytes],
             promotion: str | None, keyid: str) -> Package:
    p = statement.predicate
    spec = p.recipe or {}
    model = spec.get("model", {})
    identity = p.identity
    pins = {path: Pinned(path=path, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
            for path, data in files.items()}
    return Package(
        record=rid, name=spec.get("name", short_id(rid)), lane=spec.get("lane", ""),
        recipe=pins["recipe.toml"],
        suites=[pin for path, pin in pins.items()
                if path != "recipe.toml" and not path.startswith("patches/")],
        model=ModelPin(hub_id=model.get("hub_id"), revision=model.get("revision"),
                       manifest_sha256=_text(identity.value("model.manifest_sha256"))),
        engine=_engine(statement), figures=figures_of(statement),
        outputs=outputs_of(sealed_run(home, rid, statement).bench),
        promotion=_promotion(home, rid, promotion) if promotion else None,
        commands=COMMANDS, signer=keyid)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _engine(statement: Statement) -> EnginePin:
    p = statement.predicate
    engine = (p.recipe or {}).get("engine", {})
    source = next((s for s in p.sources if s.role == "engine"), None)
    commit = (source.commit if source else None) or engine.get("commit")
    patches = [Pinned(path=_patch_path(s.role), sha256=s.diff_sha256)
               for s in p.sources if s.dirty and s.diff_sha256]
    return EnginePin(name=_text(p.identity.value("engine.name")) or engine.get("name", ""),
                     version=_text(p.identity.value("engine.version")),
                     source=Upstream(name="engine", commit=commit,
                                     url=source.remote if source else None),
                     patches=patches)


def outputs_of(bench: Bench) -> list[PackagedOutput]:
    """The digest of each first-pass row's token ids (rows that failed are left out)."""
    return [PackagedOutput(suite=r.suite, index=r.index, prompt_id=r.prompt_id,
                           tokens=len(r.token_ids), sha256=hashlib.sha256(
                               ",".join(map(str, r.token_ids)).encode()).hexdigest())
            for r in bench.rows if r.error is None and r.round == 0 and r.start == 0]


def figures_of(statement: Statement) -> list[PackagedFigure]:
    """Every figure of the record, as a package carries it."""
    return [PackagedFigure(suite=s.suite, metric=m.name, value=m.value, low=m.ci_low,
                           high=m.ci_high, unit=m.unit,
                           quality=s.quality.state if s.quality else None)
            for s in statement.predicate.results for m in s.metrics.values()]


def _promotion(home: Home, rid: str, verification: str) -> PromotionRef:
    from registry.promote import POLICY_NAME
    from registry.store.verifications import verifications_of

    found = [v for v in verifications_of(home, rid) if v.id.startswith(verification)
             and v.statement.predicate.policy.name == POLICY_NAME]
    if len(found) != 1:
        raise NotFound(f"no promotion {verification!r} of record {short_id(rid)} in this ledger",
                       hint=f"registry promote {short_id(rid)}")
    v = found[0]
    return PromotionRef(verification=v.id, promoted=v.statement.predicate.result.value == "PASSED",
                        policy=str(v.statement.predicate.policy.parameters.get("policy", "")))


def _write(out: Path, files: dict[str, bytes], package: Package, keyid: str,
           key: Ed25519PrivateKey) -> None:
    """All of it in a temporary folder beside `out`, then renamed: a package is whole
    or absent."""
    from registry.signing.dsse import envelope_bytes, sign

    out.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=".publish-", dir=out.parent))
    try:
        for path, data in files.items():
            (temp / path).parent.mkdir(parents=True, exist_ok=True)
            (temp / path).write_bytes(data)
        payload = canonical_bytes(package)
        (temp / MANIFEST).write_bytes(payload)
        (temp / SIGNATURE).write_bytes(envelope_bytes(
            sign(payload, keyid, key, PAYLOAD_TYPE)))
        if out.exists():
            out.rmdir()
        os.replace(temp, out)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
