"""The launcher a record's engine was started through, restored for its reproduction
without `--recipe`: the record binds it by digest (launcher.json's `sha256`, of the
bytes kept in `launcher.script` when the run began), not by location.

Where the launcher is on this host where the record found it, it runs in place (its
sibling files with it) only if its bytes are the sealed ones: a launcher that differs
from the sealed digest is refused, naming both digests. Where it is not on this host,
the record's own copy (`launcher.script`, from the object store by its digest) is put
where the recipe names it, beside the suites. A record that carries neither is refused
with the way out (`--recipe`).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import ValidationError

from registry.base.confine import inside
from registry.base.hashing import sha256_file
from registry.base.model import Frozen
from registry.errors import InvalidInput, Refused
from registry.formats import rundir
from registry.formats.record import Statement
from registry.recipe.schema import Recipe
from registry.store.home import Home

MAX_LAUNCHER_BYTES = 16 << 20


class Restored(Frozen):
    """Where the recipe names the launcher (relative to its folder) and the file to put
    there: the launcher on this host (`in_place`) or the record's own copy."""

    relative: str
    file: Path
    sha256: str
    in_place: bool


def restore(home: Home, statement: Statement, recipe: Recipe) -> Restored:
    declared = recipe.engine.launcher
    assert declared is not None
    facts = _facts(home, statement, declared)
    on_disk = Path(facts.path)
    if on_disk.is_file():
        now = sha256_file(on_disk)
        if now != facts.sha256:
            raise Refused(f"the launcher {on_disk} has sha256 {now}, the record sealed "
                          f"{facts.sha256}: it is not the launcher the record ran",
                          hint="restore it (git checkout of the bound commit), move it aside "
                               "to run the record's own copy, or pass --recipe")
        return _placed(declared, on_disk, facts.sha256, True)
    blob = _blob(home, statement, facts.sha256)
    if blob is None:
        raise InvalidInput(f"the launcher {declared} (sha256 {facts.sha256}) is not at "
                           f"{on_disk} on this host and the record does not carry its bytes "
                           "(sealed before launcher.script was kept)",
                           hint="pass --recipe RECIPE.toml; its launcher is found beside it")
    return _placed(declared, blob, facts.sha256, False)


def place(restored: Restored, folder: Path) -> None:
    """Put the launcher where the plan looks for it: a link to the one on this host, or
    the record's copy written there, executable by its owner only."""
    if not restored.relative:  # named by its full path: the plan finds it in place
        return
    target = inside(folder, restored.relative)
    target.parent.mkdir(parents=True, exist_ok=True)
    if restored.in_place:
        target.symlink_to(restored.file)  # resolved by the plan: it runs in place
        return
    target.write_bytes(restored.file.read_bytes())
    os.chmod(target, 0o700)
    if sha256_file(target) != restored.sha256:
        raise Refused(f"the record's copy of the launcher does not hash to {restored.sha256}",
                      hint="the object store is damaged: run `registry verify`")


def _placed(declared: str, file: Path, digest: str, in_place: bool) -> Restored:
    if declared.startswith("/") or "$" in declared or declared.startswith("~"):
        if in_place:  # the plan finds it where it is
            return Restored(relative="", file=file, sha256=digest, in_place=True)
        raise InvalidInput(f"the launcher {declared} is not on this host; the record's copy "
                           "can only stand in for a launcher named relative to its recipe",
                           hint="put the launcher back, or pass --recipe RECIPE.toml")
    return Restored(relative=declared, file=file, sha256=digest, in_place=in_place)


def _facts(home: Home, statement: Statement, declared: str) -> rundir.LauncherFacts:
    data = _artifact(home, statement, rundir.LAUNCHER)
    try:
        if data is None:
            raise ValueError("absent")
        return rundir.LauncherFacts.model_validate_json(data)
    except (ValueError, ValidationError):
        raise InvalidInput(f"the record's recipe starts its engine through the launcher "
                           f"{declared}, but the record has no readable launcher.json",
                           hint="pass --recipe RECIPE.toml; its launcher is found beside it"
                           ) from None


def _artifact(home: Home, statement: Statement, role: str) -> bytes | None:
    from registry.store.objects import ObjectStore

    subject = statement.subject_named(statement.predicate.artifacts.get(role, role))
    if subject is None:
        return None
    path = ObjectStore(home.objects).path(subject.sha256)
    try:
        if path.stat().st_size > MAX_LAUNCHER_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _blob(home: Home, statement: Statement, digest: str) -> Path | None:
    """The record's `launcher.script`, if it is the sealed launcher's bytes."""
    from registry.store.objects import ObjectStore

    subject = statement.subject_named(
        statement.predicate.artifacts.get(rundir.LAUNCHER_SCRIPT, rundir.LAUNCHER_SCRIPT))
    if subject is None or subject.sha256 != digest:
        return None
    path = ObjectStore(home.objects).path(digest)
    return path if path.is_file() and path.stat().st_size <= MAX_LAUNCHER_BYTES else None
