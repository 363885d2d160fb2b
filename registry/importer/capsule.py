"""Import one capsule: one signed record per arm, linked to each other and to the shared
manifest. The capsule's manifest is checked first (every present listed file must
match; an absent one is reported and recorded). Rows are converted and every result is
re-derived from the raw token timestamps; the lab's published figures are recorded
beside their re-derivation. The identity is the resolver's, with the declared values
taken from the recipe given, else from the capsule's own launch and identity files.
Importing the same evidence again returns the record already made.
"""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import Field

from registry.base.canonical import digest, to_jsonable
from registry.base.hashing import Progress, sha256_file
from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.formats.identity import ResolvedField, ResolvedIdentity, Status, status_for
from registry.formats.record import (
    Environment,
    Imported,
    Predicate,
    PublishedFigure,
    RunInfo,
    Source,
    SuiteResult,
)
from registry.formats.rundir import Bench
from registry.importer.declared import Declared, declared_from, key_values
from registry.importer.findings import findings
from registry.importer.labbench import convert_bench
from registry.importer.layout import Arm, Layout, Role, detect
from registry.importer.manifest import Checked, check
from registry.importer.published import engine_figures, published_figures
from registry.importer.status import lab_outcome
from registry.importer.walk import load_json
from registry.measure.results import suite_results
from registry.recipe import Recipe
from registry.seal import allowed_overrides, contract_of, now_utc, sealed_with
from registry.store.home import Home
from registry.store.writer import Artifact, SealedRecord, Signer, write_record

CONVERTED = "bench.json"  # the converted rows' subject name (unless the capsule has one)
EXTRA_ROLES = {  # lab files that contracts and reproduce look up by role
    "teacher-token-oracle-v1.json": "teacher.tokens.json",
    "teacher-text-sha256-v1.json": "teacher.texts.json",
    "runtime-lock.json": "runtime-lock.json", "exactness-vs-q1.json": "exactness.json",
    "service-environment.txt": "environment.txt", "model-release-files.sha256": "model-manifest",
}


class ImportedRecord(Frozen):
    record: SealedRecord
    capsule: str
    arm: str
    already: bool  # the same evidence was imported before: this is that record
    recipe: str | None
    state: str
    imported: Imported
    results: list[SuiteResult]
    published: list[PublishedFigure]
    findings: list[str]


class Options(Frozen):
    recipe_path: Path | None = None
    allow_mismatch: dict[str, str] = Field(default_factory=dict)
    log: Path | None = None
    bench: Path | None = None
    manifest: Path | None = None
    checkpoint: Path | None = None  # the only file outside the capsule an import reads


def import_capsule(capsule: Path, *, home: Home, options: Options | None = None,
                   signer: Signer | None = None, progress: Progress | None = None
                   ) -> list[ImportedRecord]:
    from registry.signing.keys import signing_key

    options = options or Options()
    if options.allow_mismatch and options.recipe_path is None:
        raise InvalidInput("--allow-mismatch needs --recipe",
                           hint="without a recipe a mismatch is recorded as a finding, "
                                "never refused")
    keyid, key = signer or signing_key()  # write_record checks the home trusts it
    layout = detect(capsule, log=options.log, bench=options.bench, manifest=options.manifest)
    checked = check(capsule, layout.manifest) if layout.manifest else Checked(verified=[],
                                                                                missing=[])
    recipe = _recipe(options.recipe_path)
    names = [a.name for a in layout.arms]
    return [_import_arm(capsule, layout, arm, checked, names, recipe, options, home,
                        (keyid, key), progress) for arm in layout.arms]


def _import_arm(capsule: Path, layout: Layout, arm: Arm, checked: Checked, arms: list[str],
                recipe: Recipe | None, options: Options, home: Home, signer: Signer,
                progress: Progress | None) -> ImportedRecord:
    files = arm_files(layout, arm)
    hashes = {name: sha256_file(capsule / name) for name in files}
    named = {"checkpoint": sha256_file(options.checkpoint)} if options.checkpoint and \
        options.checkpoint.is_file() else {}  # a checkpoint named changes what is proven
    evidence = digest({"arm": arm.name, "files": hashes, "importer": signer[0],
                       "recipe": digest(recipe) if recipe else None,
                       "roles": {r.value: v for r, v in arm.files.items()}, **named})
    found = existing(home, evidence)
    if found is None:
        predicate, converted = _predicate(capsule, layout, arm, checked, arms, recipe, options,
                                          home, signer[0], hashes, evidence)
        artifacts = [Artifact(name=n, path=capsule / n) for n in files]
        if converted is not None:
            artifacts.append(Artifact(name=_converted_name(files), data=converted))
        record = write_record(home, artifacts, predicate, signer, progress)
    else:
        record, predicate = found  # what was sealed then is what this import is
    i = predicate.imported
    assert i is not None
    return ImportedRecord(
        record=record, capsule=i.capsule, arm=arm.name, already=found is not None,
        recipe=str(options.recipe_path) if options.recipe_path else None,
        state=predicate.run.state, imported=i, results=predicate.results,
        published=predicate.published, findings=findings(predicate))


def _predicate(capsule: Path, layout: Layout, arm: Arm, checked: Checked, arms: list[str],
               recipe: Recipe | None, options: Options, home: Home, importer: str,
               hashes: dict[str, str], evidence: str) -> tuple[Predicate, bytes | None]:
    """The statement's predicate for one arm, and its rows converted (None: no rows)."""
    files = list(hashes)
    rows_file, log = arm.first(Role.rows), arm.first(Role.log)
    lab = _lab_identity(capsule, arm)
    bench = convert_bench(capsule / rows_file, lab.get("suite_sha256")) if rows_file else None
    declared = declared_from(capsule, log, arm.files.get(Role.launch, []),
                             arm.files.get(Role.identity, []), arm.files.get(Role.summary, []),
                             _readmes(files, arm))
    identity = _identity(capsule, arm, recipe, options, declared)
    published = published_figures(
        capsule, [*arm.files.get(Role.summary, []), *([rows_file] if rows_file else []),
                  *arm.files.get(Role.claim, [])], bench.rows if bench else None) \
        + engine_figures(capsule, arm_files(layout, arm))
    missing = [m for m in checked.missing if _belongs(layout, arm, m)]
    state, reason = lab_outcome(capsule, arm.files.get(Role.status, []),
                                arm.files.get(Role.summary, []), log, missing)
    listed = set(checked.verified) | set(checked.missing)
    manifest = layout.manifest.path if layout.manifest else None
    imported = Imported(
        capsule=capsule.resolve().name, manifest=manifest,
        manifest_sha256=hashes.get(manifest) if manifest else None,
        verified=[v for v in checked.verified if v in hashes], missing=missing,
        unlisted=sorted(f for f in files if manifest and arm.folder and f not in listed
                        and f != manifest and _under(f, arm.folder)),
        importer=importer, lab_identity=lab, arm=arm.name, arms=arms, evidence_sha256=evidence,
        declared_by={} if recipe else declared.sources)
    predicate = Predicate(
        recipe=to_jsonable(recipe) if recipe else None,
        recipe_sha256=digest(recipe) if recipe else None, identity=identity,
        sources=_sources(capsule, files), environment=_environment(capsule, files),
        results=suite_results(bench, recipe) if bench else [],
        contract=contract_of(home, recipe, bench, identity), imported=imported,
        overrides=allowed_overrides(identity, options.allow_mismatch) if recipe else [],
        run=_run(capsule, arm, bench, state, reason), published=published,
        artifacts=_roles(layout, arm, files, _converted_name(files) if bench else None),
    )
    return predicate, bench.model_dump_json(by_alias=True).encode() if bench else None


def arm_files(layout: Layout, arm: Arm) -> list[str]:
    """The arm's own files and the capsule's shared ones (not another arm's)."""
    return [f for f in layout.files if _owner(layout, f) in (arm.name, None)]


def _owner(layout: Layout, name: str) -> str | None:
    """The arm a file belongs to (the most specific), or None: shared by every arm."""
    base = PurePosixPath(name).name
    hits = [a for a in layout.arms if (a.folder or a.run) and _under(name, a.folder)
            and (not a.run or base.startswith(a.run + "-"))]
    return max(hits, key=lambda a: (len(a.folder), len(a.run))).name if hits else None


def _belongs(layout: Layout, arm: Arm, name: str) -> bool:
    return _owner(layout, name) in (arm.name, None)


def _under(name: str, folder: str) -> bool:
    return not folder or name.startswith(folder + "/")


def existing(home: Home, evidence: str) -> tuple[SealedRecord, Predicate] | None:
    """The record already imported from the same evidence by the same importer: each
    imported record's statement file is read where the ledger keeps it, and used only
    if it still hashes to its id."""
    from registry.store.query import statements_holding

    for row, statement in statements_holding(home, ["imported=true"], evidence.encode()):
        i = statement.predicate.imported
        if i is not None and i.evidence_sha256 == evidence:
            sealed = SealedRecord(id=row.id, ledger_commit=row.ledger_commit or "",
                                  summary=row.summary, signer=row.signer or "",
                                  artifacts=len(statement.subject), bytes=0)
            return sealed, statement.predicate
    return None


def _identity(capsule: Path, arm: Arm, recipe: Recipe | None, options: Options,
              declared: Declared) -> ResolvedIdentity:
    """Resolved from the capsule's own files: no checkpoint is read but the one named
    with --checkpoint (its log's model path names a file on the importer's disk, which
    is not the capsule's evidence)."""
    from registry.resolve import resolve_run

    with tempfile.TemporaryDirectory(prefix="registry-import-") as tmp:
        staged = Path(tmp)
        for role, name in ((Role.log, "server.log"), (Role.metrics_before, "metrics-before.prom"),
                           (Role.metrics_after, "metrics-after.prom")):
            source = arm.first(role)
            if source is not None:  # capsule_files refused every link: these are its own files
                (staged / name).symlink_to((capsule / source).resolve())
        launch = arm.first(Role.launch)
        if launch is not None and launch.endswith(".json"):  # its env (the XPU W8A16 switch)
            (staged / "launch.json").symlink_to((capsule / launch).resolve())
        if arm.first(Role.log) is None:
            (staged / "server.log").write_bytes(b"")
        identity = resolve_run(staged, recipe=recipe, recipe_path=options.recipe_path,
                               checkpoint=options.checkpoint, confined=True)
    if arm.first(Role.log) is None:
        identity = identity.model_copy(update={"notes": [
            "the capsule holds no engine log for this run: no field is resolved"]})
    return identity if recipe else with_declared(identity, declared)


def _readmes(files: list[str], arm: Arm) -> list[str]:
    """The README of the arm's folder, then those of the folders above it (the capsule's)."""
    folders = [arm.folder, *(str(p) for p in PurePosixPath(arm.folder).parents)]
    names = {PurePosixPath(f).parent.as_posix(): f for f in files
             if PurePosixPath(f).name.lower() == "readme.md"}
    return [names[d] for d in ("." if f in ("", ".") else f for f in folders) if d in names]


def with_declared(identity: ResolvedIdentity, declared: Declared) -> ResolvedIdentity:
    """The resolver's fields with the capsule's declared values and their statuses."""
    fields = dict(identity.fields)
    for name, value in declared.values.items():
        f = fields.get(name) or ResolvedField(status=Status.unresolved)
        fields[name] = f.model_copy(update={"declared": value,
                                            "status": status_for(value, f.resolved)})
    return identity.model_copy(update={"fields": fields})


def _recipe(path: Path | None) -> Recipe | None:
    if path is None:
        return None
    from registry.recipe import load_recipe

    return load_recipe(path)


def _lab_identity(capsule: Path, arm: Arm) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in arm.files.get(Role.identity, []):
        if not name.endswith(".json"):
            out = key_values(capsule / name) | out  # the arm's own file first
    return out


def _converted_name(files: list[str]) -> str:
    return CONVERTED if CONVERTED not in files else "registry.bench.json"


def _roles(layout: Layout, arm: Arm, files: list[str], converted: str | None) -> dict[str, str]:
    roles = {"server.log": arm.first(Role.log), "bench.original.json": arm.first(Role.rows),
             "metrics-before.prom": arm.first(Role.metrics_before),
             "metrics-after.prom": arm.first(Role.metrics_after),
             "manifest": layout.manifest.path if layout.manifest else None,
             "bench.json": converted, "launch.json": arm.first(Role.launch),
             "identity": arm.first(Role.identity)}
    for name in files:
        role = EXTRA_ROLES.get(PurePosixPath(name).name)
        if role and role not in roles:
            roles[role] = name
    return {k: v for k, v in roles.items() if v is not None}


def _lock(capsule: Path, files: list[str]) -> dict[str, Any]:
    from registry.base.files import read_json

    lock = next((f for f in files if f.endswith("runtime-lock.json")), None)
    return read_json(capsule / lock, "runtime lock") if lock else {}


def _sources(capsule: Path, files: list[str]) -> list[Source]:
    """Source trees from the capsule's runtime lock (commits; dirty state unknown)."""
    source = _lock(capsule, files).get("source", {})
    return [Source(role=name, path=tree.get("bundle") or name, commit=tree.get("commit"),
                   note="from the capsule's runtime-lock.json")
            for name, tree in sorted(source.items() if isinstance(source, dict) else [])
            if isinstance(tree, dict)]


def _environment(capsule: Path, files: list[str]) -> Environment:
    env = next((f for f in files if f.endswith("service-environment.txt")), None)
    host = _lock(capsule, files).get("host", {})
    return Environment(host=host if isinstance(host, dict) else {},
                       variables=key_values(capsule / env) if env else {},
                       sealed_with=sealed_with())


def _run(capsule: Path, arm: Arm, bench: Bench | None, state: str, reason: str | None) -> RunInfo:
    return RunInfo(state=state, reason=reason, started_at=_started(capsule, arm, bench),
                   sealed_at=now_utc())


def _started(capsule: Path, arm: Arm, bench: Bench | None) -> str | None:
    rows = arm.first(Role.rows)
    for name, key in ((rows, ("run_identity", "created_at_utc")), (arm.first(Role.launch),
                      ("started",)), (arm.first(Role.identity), ("start_utc",))):
        data = load_json(capsule / name) if name and name.endswith(".json") else None
        for k in key:
            data = data.get(k) if isinstance(data, dict) else None
        if isinstance(data, str):
            return data[:40]
    return None
