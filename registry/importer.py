"""`registry import`: seal a lab record capsule (such as the Laguna B70 capsule) as an
imported record, signed by the importer.

The capsule's sha256 manifest is checked first: every present file must match; a
listed file that is absent is reported and recorded (`imported.missing`), never
ignored. The lab's rows are converted to `registry.rundir.Bench` (the original file
is sealed too) and every result is re-derived from the raw token timestamps; the
capsule's own summary is never read. The engine log is resolved with the recipe
given, else with the one recipe whose engine commit is the capsule's `vllm_commit`
and whose identity the log confirms without a mismatch.
"""

from __future__ import annotations

import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from registry.canonical import digest, to_jsonable
from registry.errors import InvalidInput, NotFound, RegistryError, VerificationFailed
from registry.files import read_json
from registry.hashing import Progress
from registry.identity import ResolvedIdentity
from registry.recipe import Recipe
from registry.record import Environment, Imported, Predicate, RunInfo, Source, SuiteResult
from registry.results import suite_results
from registry.rundir import Bench, BenchRow, SuiteRef
from registry.seal import allowed_overrides, contract_of, now_utc, sealed_with
from registry.store.home import Home
from registry.store.writer import Artifact, SealedRecord, Signer, write_record

MANIFEST = "evidence/record-run.sha256"
RUN = "evidence/record-run"
ROLES = {  # role -> the capsule file that plays it
    "server.log": f"{RUN}/server.log", "bench.original.json": f"{RUN}/bench.json",
    "metrics-before.prom": f"{RUN}/metrics-before-suite.prom",
    "metrics-after.prom": f"{RUN}/metrics-after-suite.prom",
    "identity.txt": f"{RUN}/identity.txt", "environment.txt": f"{RUN}/service-environment.txt",
    "exactness.json": f"{RUN}/exactness-vs-q1.json", "manifest": MANIFEST,
    "teacher.tokens.json": "teacher-token-oracle-v1.json",
    "teacher.texts.json": "teacher-text-sha256-v1.json",
    "runtime-lock.json": "manifests/runtime-lock.json",
    "model-manifest": "manifests/model-release-files.sha256",
}


class ImportedRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    record: SealedRecord
    recipe: str | None
    imported: Imported
    results: list[SuiteResult]


def import_capsule(capsule: Path, *, home: Home, recipe_path: Path | None = None,
                   allow_mismatch: dict[str, str] | None = None, signer: Signer | None = None,
                   progress: Progress | None = None) -> ImportedRecord:
    from registry.store.keys import signing_key

    keyid, key = signer or signing_key()
    verified, missing, unlisted = check_manifest(capsule)
    for needed in (ROLES["server.log"], ROLES["bench.original.json"]):
        if needed not in verified:
            raise InvalidInput(f"{capsule}: {needed} is absent",
                               hint="a capsule needs its engine log and raw rows")
    lab = key_values(capsule / ROLES["identity.txt"])
    bench = convert_bench(capsule / ROLES["bench.original.json"], lab.get("suite_sha256"))
    recipe_path, recipe, identity = resolve_capsule(capsule, lab, recipe_path)
    imported = Imported(capsule=capsule.resolve().name, manifest=MANIFEST,
                        manifest_sha256=_sha256(capsule / MANIFEST), verified=verified,
                        missing=missing, unlisted=unlisted, importer=keyid, lab_identity=lab)
    results = suite_results(bench, recipe)
    files = sorted(p.relative_to(capsule).as_posix() for p in capsule.rglob("*") if p.is_file())
    predicate = Predicate(
        recipe=to_jsonable(recipe) if recipe else None,
        recipe_sha256=digest(recipe) if recipe else None,
        identity=identity, sources=lab_sources(capsule), environment=_environment(capsule),
        results=results, contract=contract_of(home, recipe, bench, identity), imported=imported,
        overrides=allowed_overrides(identity, allow_mismatch or {}), run=_run(capsule, missing),
        artifacts={role: path for role, path in ROLES.items() if path in files}
        | {"bench.json": "bench.json"},
    )
    converted = bench.model_dump_json(by_alias=True).encode()
    artifacts = [*(Artifact(name=name, path=capsule / name) for name in files),
                 Artifact(name="bench.json", data=converted)]
    record = write_record(home, artifacts, predicate, (keyid, key), progress)
    return ImportedRecord(record=record, recipe=str(recipe_path) if recipe_path else None,
                          imported=imported, results=results)


def check_manifest(capsule: Path) -> tuple[list[str], list[str], list[str]]:
    """(verified, missing, unlisted) capsule paths; a present file that does not
    match its manifest line is refused."""
    from registry.hashing import sha256_file

    manifest = capsule / MANIFEST
    if not manifest.is_file():
        raise InvalidInput(f"{capsule}: not a lab record capsule (no {MANIFEST})")
    verified, missing = [], []
    for number, expected, name in _manifest_lines(manifest):
        path = manifest.parent / name
        listed = path.relative_to(capsule).as_posix()
        if not path.is_file():
            missing.append(listed)
        elif sha256_file(path) != expected:
            raise VerificationFailed(f"{path}: does not match {MANIFEST} line {number}",
                                     hint="the capsule was changed after it was sealed")
        else:
            verified.append(listed)
    run = capsule / RUN
    unlisted = sorted(p.relative_to(capsule).as_posix() for p in run.rglob("*")
                      if p.is_file() and p.relative_to(capsule).as_posix() not in verified)
    return verified, missing, unlisted


def _manifest_lines(manifest: Path) -> list[tuple[int, str, str]]:
    """(line number, sha256, path relative to the manifest) per `sha256sum` line."""
    out = []
    for number, line in enumerate(_text(manifest).splitlines(), 1):
        if not line.strip():
            continue
        digest_, _, name = line.partition(" ")
        name = name.lstrip(" *")
        parts = PurePosixPath(name).parts
        if len(digest_) != 64 or not name or name.startswith("/") or ".." in parts:
            raise InvalidInput(f"{manifest}: line {number}: not a `sha256  relative/path` line")
        out.append((number, digest_.lower(), name))
    return out


def key_values(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (identity.txt, service-environment.txt); other lines skipped."""
    if not path.is_file():
        return {}
    pairs = (line.partition("=") for line in _text(path).splitlines())
    return {k: v for k, sep, v in pairs if sep and k and " " not in k}


def convert_bench(path: Path, suite_sha256: str | None = None) -> Bench:
    """The lab's bench.json as registry rows: token ids with their arrival offsets.
    `suite_sha256`: the suite file's digest (identity.txt names it; bench.json does not)."""
    data = _json(path)
    run = data.get("run_identity", {})
    suite = run.get("suite", {}).get("suite_id", "suite")
    try:
        rows = [_row(suite, raw) for raw in data["rows"]]
        params = {k: run[k] for k in ("max_tokens", "seed", "request_extra") if k in run}
        suites = [SuiteRef(name=suite, sha256=suite_sha256, prompts=len(rows))]
        return Bench(api=run.get("api_mode", "completions"), model=run.get("model", "?"),
                     params=params, suites=suites, rows=rows)
    except (KeyError, TypeError, ValidationError) as e:
        raise InvalidInput(f"{path}: rows are not in the lab's bench format ({e!s:.200})") from None


def _row(suite: str, raw: dict[str, Any]) -> BenchRow:
    return BenchRow(
        suite=suite, index=raw["prompt_index"], prompt_id=raw["prompt_id"],
        prompt_sha256=raw["prompt_sha256"], prompt_tokens=raw.get("prompt_tokens"),
        cached_tokens=raw.get("cached_tokens"), completion_tokens=raw.get("completion_tokens"),
        request_started_epoch_s=raw.get("request_started_epoch_s"), token_ids=raw["token_ids"],
        token_times_s=raw["token_id_offsets_s"], chunk_times_s=raw.get("chunk_offsets_s", []),
        text_sha256=raw.get("sha256"), error=raw.get("error"),
    )


def resolve_capsule(capsule: Path, lab: dict[str, str], recipe_path: Path | None
                    ) -> tuple[Path | None, Recipe | None, ResolvedIdentity]:
    """Resolve the capsule's log with the given recipe, or the one that matches it."""
    from registry.recipe import load_recipe
    from registry.resolve import resolve_run

    with tempfile.TemporaryDirectory(prefix="registry-import-") as tmp:
        staged = Path(tmp)
        for role in ("server.log", "metrics-before.prom", "metrics-after.prom"):
            if (capsule / ROLES[role]).is_file():
                (staged / role).symlink_to((capsule / ROLES[role]).resolve())
        if recipe_path is not None:
            recipe = load_recipe(recipe_path)
            return recipe_path, recipe, resolve_run(staged, recipe=recipe, recipe_path=recipe_path)
        matches = []
        for path, recipe in _recipes_for(lab.get("vllm_commit")):
            identity = resolve_run(staged, recipe=recipe, recipe_path=path)
            if not identity.mismatches():
                matches.append((path, recipe, identity))
    if len(matches) != 1:
        found = ", ".join(str(m[0].name) for m in matches) or "none"
        raise NotFound(f"{capsule}: no single recipe matches its identity "
                       f"(vllm_commit {lab.get('vllm_commit')}; matching: {found})",
                       hint="name it: registry import CAPSULE --recipe FILE")
    return matches[0]


def _recipes_for(commit: str | None) -> list[tuple[Path, Recipe]]:
    from registry.recipe import load_recipe

    found: dict[str, tuple[Path, Recipe]] = {}  # by digest: a copy of a recipe is that recipe
    for folder in recipe_dirs():
        for path in sorted(folder.glob("*.toml")):
            try:
                recipe = load_recipe(path)
            except RegistryError:
                continue
            if commit and recipe.engine.commit == commit:
                found.setdefault(digest(recipe), (path, recipe))
    return list(found.values())


def recipe_dirs() -> list[Path]:
    """`recipes/` in the current folder or one above it, then beside the package."""
    here = Path.cwd().resolve()
    found = [d / "recipes" for d in (here, *here.parents) if (d / "recipes").is_dir()]
    beside = Path(__file__).resolve().parents[1] / "recipes"
    return list(dict.fromkeys([*found[:1], *([beside] if beside.is_dir() else [])]))


def lab_sources(capsule: Path) -> list[Source]:
    """Source trees from the capsule's runtime lock (commits; dirty state unknown)."""
    lock = _json(capsule / ROLES["runtime-lock.json"])
    return [Source(role=name, path=tree.get("bundle") or name, commit=tree.get("commit"),
                   note="from the capsule's manifests/runtime-lock.json")
            for name, tree in sorted(lock.get("source", {}).items()) if isinstance(tree, dict)]


def _environment(capsule: Path) -> Environment:
    return Environment(host=_json(capsule / ROLES["runtime-lock.json"]).get("host", {}),
                       variables=key_values(capsule / ROLES["environment.txt"]),
                       sealed_with=sealed_with())


def _run(capsule: Path, missing: list[str]) -> RunInfo:
    """The lab's status is not a registry status: the state stays `unknown`."""
    status = f"{RUN}/status.txt"
    reason = None
    if status in missing:
        reason = f"{status} is listed in the manifest but absent"
    elif (capsule / status).is_file():
        reason = f"lab status: {(capsule / status).read_text(errors='replace').strip()[:200]}"
    started = _json(capsule / ROLES["bench.original.json"]).get("run_identity", {})
    return RunInfo(state="unknown", reason=reason, started_at=started.get("created_at_utc"),
                   sealed_at=now_utc())


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read ({e.strerror})") from None


def _json(path: Path) -> dict[str, Any]:
    return read_json(path, path.name) if path.is_file() else {}


def _sha256(path: Path) -> str:
    from registry.hashing import sha256_file

    return sha256_file(path)
