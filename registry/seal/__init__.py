"""`registry seal`: turn a finished run directory into a signed record.

seal = resolve the identity (registry.resolve) + gather (artifacts, sources,
environment, results re-derived from the raw rows) + write (registry.store.writer).
A declared value the evidence contradicts (`mismatch`) is refused unless the sealer
allows that field explicitly with a reason, which the record keeps. A run the raw
evidence shows failed is refused; evidence that proves nothing is refused unless the
sealer gives a reason, which marks the record unproven (registry/seal/proof.py).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pydantic import ValidationError

from registry import __version__
from registry.base.canonical import digest, to_jsonable
from registry.base.confine import regular_files
from registry.base.files import read_json
from registry.base.hashing import Progress
from registry.engines.plugin import engine_for
from registry.errors import InvalidInput, Refused
from registry.formats import rundir
from registry.formats.identity import ResolvedIdentity
from registry.formats.record import (
    ContractInfo,
    Environment,
    Imported,
    Override,
    Predicate,
    RunInfo,
    Source,
    match_id,
)
from registry.formats.unproven import Unproven
from registry.measure.results import suite_results
from registry.recipe.schema import Recipe
from registry.resolve.inputs import Checkpoints
from registry.seal.proof import require_proof
from registry.store.home import Home
from registry.store.writer import Artifact, SealedRecord, Signer, write_record

# role -> file name in a run directory (docs/run-directory.md)
ROLES = {name: name for name in (
    rundir.SERVER_LOG, rundir.RECIPE_JSON, rundir.RECIPE_TOML, rundir.LAUNCH, rundir.ENVIRONMENT,
    rundir.METRICS_BEFORE, rundir.METRICS_AFTER, rundir.BENCH, rundir.OUTPUTS, rundir.STATUS,
    rundir.CONTAINER, rundir.LAUNCHER, rundir.LAUNCHER_SCRIPT,
)}


def seal_run(run_dir: Path, *, home: Home, recipe_path: Path | None = None,
             allow_mismatch: dict[str, str] | None = None, parent: str | None = None,
             imported: Imported | None = None, signer: Signer | None = None,
             progress: Progress | None = None, allowed: Sequence[Override] = (),
             allow_unproven: str | None = None, again: bool = True) -> SealedRecord:
    """Resolve, check and seal one run directory; `progress` gets bytes hashed;
    `allowed` records further differences the caller accepted (e.g. environment drift
    allowed by `reproduce --allow-env-drift`); `allow_unproven` is the sealer's reason
    to keep a run whose evidence proves nothing (registry/seal/proof.py). `again=False`
    returns the record already sealed from this run's log and rows, if there is one
    (`registry seal` does, unless --again)."""
    from registry.resolve import resolve_run, scan_run_log
    from registry.resolve.inputs import load_run_recipe

    rundir.require_run_dir(run_dir)
    regular_files(run_dir)  # refused before anything in it is read
    if not again:
        from registry.seal.existing import already_sealed

        found = already_sealed(home, run_dir, _parent(home, parent))
        if found is not None:
            return found
    run = run_info(run_dir)
    recipe = load_run_recipe(run_dir, None, recipe_path)
    _require_pinned_image(run_dir, recipe)
    scan = scan_run_log(run_dir, recipe)
    checkpoints = Checkpoints()
    identity = resolve_run(run_dir, recipe=recipe, recipe_path=recipe_path, scan=scan,
                           checkpoints=checkpoints)
    unproven = require_proof(identity, scan, read_bench(run_dir), allow_unproven)
    overrides = [*allowed_overrides(identity, allow_mismatch or {}), *allowed]
    sources, source_files = capture_sources(run_dir, recipe, recipe_path, home)
    prompts = prompt_artifacts(run_dir, recipe, recipe_path)
    return seal_resolved(run_dir, home=home, identity=identity, recipe=recipe, run=run,
                         sources=sources, extra=[*source_files, *prompts,
                                                 *evidence_artifacts(checkpoints)],
                         overrides=overrides,
                         parent=parent, imported=imported, signer=signer, progress=progress,
                         unproven=unproven)


def seal_resolved(run_dir: Path, *, home: Home, identity: ResolvedIdentity, recipe: Recipe | None,
                  run: RunInfo | None = None, sources: Sequence[Source] = (),
                  extra: Sequence[Artifact] = (), overrides: Sequence[Override] = (),
                  parent: str | None = None, imported: Imported | None = None,
                  signer: Signer | None = None, progress: Progress | None = None,
                  unproven: Unproven | None = None) -> SealedRecord:
    """Gather a run directory whose identity is already resolved, and write the record."""
    from registry.measure.physical import refuse_rows

    artifacts = [*run_artifacts(run_dir), *extra]
    names = {a.name for a in artifacts}
    bench = read_bench(run_dir)
    if bench is not None:  # an impossible measurement is never sealed (issue 23 item 6)
        refuse_rows(bench.rows, str(run_dir / rundir.BENCH))
    predicate = Predicate(
        recipe=to_jsonable(recipe) if recipe else None,
        recipe_sha256=digest(recipe) if recipe else None,
        identity=identity, sources=list(sources), environment=run_environment(run_dir),
        results=suite_results(bench, recipe) if bench else [],
        contract=contract_of(home, recipe, bench, identity),
        parent=_parent(home, parent), imported=imported, overrides=list(overrides),
        unproven=unproven, run=run or run_info(run_dir),
        artifacts={role: name for role, name in ROLES.items() if name in names},
    )
    return write_record(home, artifacts, predicate, signer, progress)


def prompt_artifacts(run_dir: Path, recipe: Recipe | None,
                     recipe_path: Path | None) -> list[Artifact]:
    """A run that predates sealed prompts (no `suites/` folder): the suites read beside
    `recipe_path`, each only when it still has the digest the recipe pins, so the record
    carries its prompts and `reproduce` needs no `--recipe`."""
    import hashlib

    if recipe is None or recipe_path is None or (run_dir / rundir.SUITES).exists():
        return []
    out = []
    for spec in recipe.benchmark.suites:
        if not spec.sha256 or not spec.path or "$" in spec.path:
            continue
        path = recipe_path.parent / spec.path
        data = path.read_bytes() if path.is_file() else b""
        if hashlib.sha256(data).hexdigest() == spec.sha256:
            out.append(Artifact(name=f"{rundir.SUITES}/{spec.name}.jsonl", data=data))
    return out


def evidence_artifacts(checkpoints: Checkpoints) -> list[Artifact]:
    """What the resolver read from the checkpoints, so the record can be re-resolved
    without them (registry/resolve/evidence.py)."""
    from registry.resolve.evidence import evidence_files

    return [Artifact(name=name, data=data) for name, data in evidence_files(checkpoints).items()]


def run_artifacts(run_dir: Path) -> list[Artifact]:
    """Every regular file of the run directory, named by its relative path; a link out
    of the directory is refused (registry/base/confine.py)."""
    root = run_dir.resolve()
    return [Artifact(name=p.relative_to(root).as_posix(), path=p) for p in regular_files(root)]


def run_info(run_dir: Path) -> RunInfo:
    sealed_at = now_utc()
    if not (run_dir / rundir.STATUS).is_file():
        return RunInfo(state="unknown", sealed_at=sealed_at)
    status: rundir.RunStatus = rundir.read_model(run_dir / rundir.STATUS, rundir.RunStatus)
    if status.state is not rundir.RunState.complete:
        raise Refused(f"{run_dir / rundir.STATUS}: the run is {status.state.value}"
                      + (f" ({status.reason})" if status.reason else ""),
                      hint="only a complete run is sealed; run it again")
    return RunInfo(state=status.state.value, reason=status.reason, started_at=status.started_at,
                   finished_at=status.finished_at, sealed_at=sealed_at)


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def allowed_overrides(identity: ResolvedIdentity, allow: dict[str, str]) -> list[Override]:
    """Every mismatch must be allowed with a reason; nothing else may be."""
    mismatches = identity.mismatches()
    stray = sorted(set(allow) - set(mismatches))
    if stray:
        raise InvalidInput(f"--allow-mismatch {stray[0]}: not a mismatch in this run",
                           hint=f"mismatched fields: {', '.join(mismatches) or 'none'}")
    refused = [m for m in mismatches if not allow.get(m, "").strip()]
    if refused:
        lines = "; ".join(_mismatch_text(identity, m) for m in refused)
        raise Refused(f"identity mismatch: {lines}",
                      hint=f"fix the recipe or the run, or seal anyway with "
                           f"--allow-mismatch {refused[0]} --reason TEXT")
    return [Override(field=m, reason=allow[m], declared=identity.fields[m].declared,
                     resolved=identity.fields[m].resolved) for m in mismatches]


def _require_pinned_image(run_dir: Path, recipe: Recipe | None) -> None:
    """A tag can be moved to other bytes: a container run seals only with its image named
    by digest (in the recipe or the run's plan)."""
    plan = _launch_plan(run_dir)
    image = (plan.container.image if plan and plan.container else
             recipe.engine.container.image if recipe and recipe.engine.container else None)
    if image is not None and "@sha256:" not in image:
        raise Refused(f"engine.container.image {image!r} is a tag, not a digest: a sealed run "
                      "names its image by digest",
                      hint="pin it: IMAGE@sha256:<digest> (`podman image inspect IMAGE "
                           "--format '{{.Digest}}'`)")


def _mismatch_text(identity: ResolvedIdentity, name: str) -> str:
    f = identity.fields[name]
    where = f" ({f.evidence[0].source}:{f.evidence[0].line})" if f.evidence else ""
    return f"{name} declared {f.declared!r}, resolved {f.resolved!r}{where}"


def capture_sources(run_dir: Path, recipe: Recipe | None, recipe_path: Path | None,
                    home: Home) -> tuple[list[Source], list[Artifact]]:
    """The recipe's repository, the engine tree and any launcher, each as a Source;
    the registry home and the keys folder never enter a diff."""
    from registry.seal.roots import portable
    from registry.seal.sources import capture
    from registry.signing.keys import keys_dir

    wanted: list[tuple[str, Path, str | None]] = []
    if recipe_path is not None:
        wanted.append(("recipe", recipe_path.resolve().parent, None))
    host = _host(run_dir)
    if isinstance(host, rundir.Environment):
        direct_url, installed = host.engine_source, host.engine_package
    else:  # environment.json as written, when it is not the typed model
        found = host.get("engine_source")
        direct_url, installed = (found if isinstance(found, dict) else None), None
    location, version = engine_tree(recipe, direct_url, installed)
    if location is not None:
        wanted.append(("engine", location, version))
    plan = _launch_plan(run_dir)
    if plan is not None and plan.launcher:  # a relative launcher is the plan's cwd's
        wanted.append(("launcher", Path(plan.cwd) / plan.launcher, None))
    roots = run_roots(run_dir, recipe_path, plan)
    sources, files = [], []
    for role, path, version in wanted:
        if "$" in str(path):  # os.path.expandvars leaves unset variables in place
            sources.append(Source(role=role, path=str(path), version=version,
                                  note="a variable in this path is not set here"))
            continue
        source, artifacts = capture(role, path, exclude=[home.root, keys_dir()])
        source = source.model_copy(update={"version": version}) if version else source
        sources.append(portable(source, roots))
        files += artifacts
    return sources, files


def _launch_plan(run_dir: Path) -> rundir.LaunchPlan | None:
    if not (run_dir / rundir.LAUNCH).is_file():
        return None
    plan: rundir.LaunchPlan = rundir.read_model(run_dir / rundir.LAUNCH, rundir.LaunchPlan)
    return plan


def run_roots(run_dir: Path, recipe_path: Path | None,
              plan: rundir.LaunchPlan | None) -> dict[str, Path]:
    """The folders a record's paths are named against (registry/seal/roots.py): the run
    directory, the recipe's folder, ${REGISTRY_MODELS} as the sealer has it, and the
    checkpoint the plan's `--model` names."""
    from registry.executor.plan import MODELS_VAR, model_path

    roots = {"run": run_dir}
    if recipe_path is not None:
        roots["recipe"] = recipe_path.resolve().parent
    if os.path.isabs(os.environ.get(MODELS_VAR, "")):
        roots["models"] = Path(os.environ[MODELS_VAR])
    model = model_path(plan) if plan is not None else None
    if model is not None and "$" not in model:
        roots["model"] = Path(plan.cwd if plan else ".") / model
    return roots


def engine_tree(recipe: Recipe | None, direct_url: dict[str, Any] | None,
                installed: rundir.EnginePackage | None = None
                ) -> tuple[Path | None, str | None]:
    """The engine's source tree and distribution version: the recipe's `engine.source`,
    else the local tree a source build was installed from (its PEP 610 `direct_url`),
    else the installed package itself: where the engine's interpreter found it
    (`installed`, environment.json), else where this process finds it (a run directory
    written before the engine's interpreter was asked; found without importing it)."""
    from registry.seal.sources import engine_location

    if recipe is not None and recipe.engine.source:
        return Path(os.path.expandvars(recipe.engine.source)), None
    package = engine_for(recipe.engine.name if recipe else None).package
    if package is None:
        return None, None  # a binary engine: no installed Python package is its tree
    tree = source_dir(direct_url)
    if tree is not None:
        return tree, None
    if installed is not None:
        return Path(installed.path), installed.version
    return engine_location(package)


def source_dir(direct_url: dict[str, Any] | None) -> Path | None:
    """The local folder a PEP 610 record says the engine was built from (a checkout,
    editable or not). A wheel or sdist file (`archive_info`) and a VCS URL name no tree
    here: pip's URL of a wheel is a path on whatever machine downloaded it."""
    url = (direct_url or {}).get("url")
    if not isinstance(url, str) or not url.startswith("file://"):
        return None
    if not isinstance((direct_url or {}).get("dir_info"), dict):
        return None
    return Path(unquote(urlparse(url).path))


def run_environment(run_dir: Path) -> Environment:
    variables: dict[str, str] = {}
    if (run_dir / rundir.LAUNCH).is_file():
        variables = rundir.read_model(run_dir / rundir.LAUNCH, rundir.LaunchPlan).env
    return Environment(host=_host(run_dir), variables=variables, sealed_with=sealed_with())


def _host(run_dir: Path) -> rundir.Environment | dict[str, Any]:
    """environment.json: the executor's typed host facts, else as written, else {}."""
    path = run_dir / rundir.ENVIRONMENT
    if not path.is_file():
        return {}
    facts = read_json(path, path.name)
    try:
        return rundir.Environment.model_validate(facts)
    except ValidationError:
        return facts


def sealed_with() -> dict[str, str]:
    return {"registry": __version__, "python": platform.python_version()}


def read_bench(run_dir: Path) -> rundir.Bench | None:
    path = run_dir / rundir.BENCH
    return rundir.read_model(path, rundir.Bench) if path.is_file() else None


def contract_of(home: Home, recipe: Recipe | None, bench: rundir.Bench | None,
                identity: ResolvedIdentity) -> ContractInfo | None:
    """The recipe's contract and its verdict on the raw rows, as a report: `registry check`
    and `reproduce` re-derive it, never read it back."""
    if recipe is None:
        return None
    verdict = None
    if bench is not None:
        from registry.contracts.check import judge

        verdict = judge(home, recipe, bench, identity)
    return ContractInfo(name=recipe.quality.contract.value, teacher=recipe.quality.teacher,
                        verdict=verdict)


def _parent(home: Home, parent: str | None) -> str | None:
    if parent is None:
        return None
    from registry.store.ledger import Ledger

    return match_id(parent, Ledger(home.ledger).record_ids())
