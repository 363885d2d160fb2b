"""`registry publish --rerun DIR`: a package run again from its own files alone and
judged against its own figures, in a home that has never seen the record it came from.

package ► closure (its files present and hashing as pinned, a signature that holds or
cannot be checked yet) ► its `launch` command (`registry run recipe.toml`, output in
`run/` beside the recipe; a `run/` that launch already wrote is taken as it is) ►
sealed into this home ► each packaged output (the digest of a prompt's token ids at
temperature 0) and each packaged figure beside the new one, one row each.

The rows are judged from the two figures and their 95% intervals, with the floor
`reproduce` uses (`min_performance`, 0.95): a rate (tok/s) passes when the new interval
lies at or above floor x the packaged interval's low end, fails when it lies wholly
below it, and is undecided between; a time (s, ms) the same way against packaged high /
floor. A figure the package gives without an interval, or in another unit, is a row
that says it was not judged. The verdict passes only when no row failed or was
undecided and at least one passed. The model manifest and engine version the new
record resolved are compared with the package's pins too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.errors import InvalidInput, Refused
from registry.formats.display import short_id
from registry.publish.package import Package, PackagedFigure, PackagedOutput
from registry.store.home import Home

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from registry.formats.identity import ResolvedIdentity
    from registry.publish.closure import Closure

RUN = "run"  # where the package's launch command writes (registry/publish/__init__.py)
BLOCKING = {"file_missing", "file_hash_mismatch", "path_outside_package", "commands_not_five",
            "figures_missing", "signature_invalid", "signature_missing", "manifest_invalid",
            "schema_mismatch"}
RATES = {"tok/s"}
TIMES = {"s", "ms"}


class RerunRow(Frozen):
    """One packaged figure, or pin, beside the re-run's."""

    name: str = Field(description="suite/metric, or the identity field")
    packaged: str
    new: str | None = None
    verdict: str = Field(description="passed | failed | undecided | not judged")
    why: str


class Rerun(Frozen):
    package: str = Field(description="the record the package was published from")
    run_dir: str
    launched: bool = Field(description="False when launch's run/ was already there")
    signature: str = Field(description="verified, or why it could not be checked here")
    record: str = Field(description="the re-run, sealed in this home")
    min_performance: float
    rows: list[RerunRow] = Field(default_factory=empty_list)
    verdict: str = Field(description="passed | failed | undecided | not judged")
    passed: bool


def rerun_package(home: Home, folder: Path, *, models_dir: Path | None = None,
                  min_performance: float = 0.95) -> Rerun:
    """Run the package in `folder` again (or take the run its launch wrote) and judge it."""
    from registry.contracts.sealed import load_sealed
    from registry.formats.record import parse_statement
    from registry.publish import figures_of, outputs_of
    from registry.publish.closure import check_package
    from registry.seal import seal_run
    from registry.store.query import checked_statement

    if min_performance <= 0:
        raise InvalidInput(f"--min-performance {min_performance}: must be above 0")
    closure = check_package(folder, trusted=_trusted(home, folder))
    package = _intact(folder, closure)
    signature = next((f"not checked: {f.detail}" for f in closure.findings
                      if f.code == "signature_unverifiable"), "verified")
    run_dir = folder / RUN
    launched = not (run_dir / "bench.json").is_file()
    if launched:
        from registry.executor.run import run_recipe

        run_recipe(folder / "recipe.toml", run_dir, models_dir=models_dir)
    sealed = seal_run(run_dir, home=home, recipe_path=folder / "recipe.toml")
    _, _, data = checked_statement(home, sealed.id)
    statement = parse_statement(data)
    new = {(f.suite, f.metric): f for f in figures_of(statement)}
    rows = _outputs(package, outputs_of(load_sealed(home, sealed.id).bench))
    rows += [_judged(f, new.get((f.suite, f.metric)), min_performance)
             for f in package.figures]
    rows += _pins(package, statement.predicate.identity)
    verdict = _verdict(rows)
    return Rerun(package=package.record, run_dir=str(run_dir), launched=launched,
                 signature=signature,
                 record=sealed.id, min_performance=min_performance, rows=rows,
                 verdict=verdict, passed=verdict == "passed")


def _trusted(home: Home, folder: Path) -> dict[str, Ed25519PublicKey] | None:
    """This home's signers when they include the package's publisher, else None: a
    stranger who has not pinned the publisher's key cannot check who signed, and the
    re-run says so (a signature that does not sign these bytes is refused still)."""
    from registry.base.safeload import loads_json
    from registry.errors import RegistryError
    from registry.publish.package import MANIFEST
    from registry.signing.keyring import Role
    from registry.store.trust import current_keyring

    try:
        signers = current_keyring(home).current.with_role(Role.signer)
        raw = loads_json((folder / MANIFEST).read_bytes())
    except (RegistryError, OSError, ValueError):
        return None
    signer = raw.get("signer") if isinstance(raw, dict) else None
    return signers if signer in signers else None


def _intact(folder: Path, closure: Closure) -> Package:
    """The package, refused when it cannot be run from its own files."""
    from registry.base.safeload import loads_json
    from registry.publish.package import MANIFEST

    blocking = [f for f in closure.findings if f.code in BLOCKING]
    if blocking:
        raise Refused(f"{folder}: the package cannot be re-run from its own files: "
                      + "; ".join(f"{f.code} ({f.detail})" for f in blocking[:4]),
                      hint=f"registry publish --check {folder}")
    return Package.model_validate(loads_json((folder / MANIFEST).read_bytes()))


def _outputs(package: Package, new: list[PackagedOutput]) -> list[RerunRow]:
    """Each packaged output beside the re-run's for the same suite and prompt."""
    found = {(o.suite, o.index, o.prompt_id): o for o in new}
    out = []
    for o in package.outputs:
        again = found.get((o.suite, o.index, o.prompt_id))
        same = again is not None and again.sha256 == o.sha256
        out.append(RerunRow(
            name=f"{o.suite}/{o.prompt_id} output",
            packaged=f"{o.tokens} tokens {short_id(o.sha256)}",
            new=None if again is None else f"{again.tokens} tokens {short_id(again.sha256)}",
            verdict="passed" if same else "failed",
            why="the same token ids" if same else "no such row in the re-run"
            if again is None else "other token ids"))
    return out


def _interval(f: PackagedFigure) -> tuple[float, float] | None:
    return None if f.low is None or f.high is None else (f.low, f.high)


def _judged(old: PackagedFigure, new: PackagedFigure | None, floor: float) -> RerunRow:
    name = f"{old.suite}/{old.metric}"
    packaged = f"{old.value:.4g} {old.unit or ''}".strip()
    span = _interval(old)
    if new is None:
        return RerunRow(name=name, packaged=packaged, verdict="failed",
                        why="the re-run has no such figure")
    shown = f"{new.value:.4g} {new.unit or ''}".strip()
    if span is None or old.unit not in RATES | TIMES:
        return RerunRow(name=name, packaged=packaged, new=shown, verdict="not judged",
                        why="the package gives no interval for it" if span is None
                        else f"unit {old.unit!r}: no direction to judge")
    low, high = _interval(new) or (new.value, new.value)
    if old.unit in RATES:
        bar = floor * span[0]
        verdict = "passed" if low >= bar else "failed" if high < bar else "undecided"
        why = f"new [{low:.4g}, {high:.4g}] against {floor:g} x packaged low {span[0]:.4g}"
    else:
        bar = span[1] / floor
        verdict = "passed" if high <= bar else "failed" if low > bar else "undecided"
        why = f"new [{low:.4g}, {high:.4g}] against packaged high {span[1]:.4g} / {floor:g}"
    if new.quality and new.quality != "valid":
        verdict, why = "not judged", f"the re-run's measurement is {new.quality}"
    return RerunRow(name=name, packaged=packaged, new=shown, verdict=verdict, why=why)


def _pins(package: Package, identity: ResolvedIdentity) -> list[RerunRow]:
    """The identity the package pins, beside what the re-run resolved."""
    out = []
    for name, pinned in (("model.manifest_sha256", package.model.manifest_sha256),
                         ("engine.version", package.engine.version)):
        if pinned is None:
            continue
        found = identity.value(name)
        same = found is not None and str(found) == pinned
        out.append(RerunRow(name=name, packaged=pinned, new=None if found is None else str(found),
                            verdict="passed" if same else "failed",
                            why="the same" if same else "the re-run resolved another"))
    return out


def _verdict(rows: list[RerunRow]) -> str:
    verdicts = {r.verdict for r in rows}
    for worst in ("failed", "undecided"):
        if worst in verdicts:
            return worst
    return "passed" if "passed" in verdicts else "not judged"
