"""Import a folder of capsules in one call (`registry import DIR --each`): each subfolder
is a capsule; one with no run evidence is reported as skipped, and one that cannot be
imported (a file that no longer matches its manifest, ...) stops nothing but itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from registry.base.hashing import Progress
from registry.base.model import Frozen
from registry.errors import RegistryError, error_name
from registry.importer.capsule import ImportedRecord, Options, import_capsule
from registry.store.home import Home
from registry.store.writer import Signer


class Problem(Frozen):
    capsule: str
    error: str  # the registry.errors class it raised: InvalidInput, NotFound, ...
    message: str


class FolderImport(Frozen):
    records: list[ImportedRecord]
    skipped: list[Problem]  # not a capsule
    failed: list[Problem]  # a capsule that could not be imported (changed bytes, ...)


def import_folder(folder: Path, *, home: Home, options: Options | None = None,
                  signer: Signer | None = None, progress: Progress | None = None,
                  step: Callable[[str], None] | None = None) -> FolderImport:
    records: list[ImportedRecord] = []
    skipped: list[Problem] = []
    failed: list[Problem] = []
    for capsule in sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()):
        if step:
            step(capsule.name)
        try:
            records += import_capsule(capsule, home=home, options=options, signer=signer,
                                      progress=progress)
        except RegistryError as e:
            bucket = skipped if "no run evidence found" in e.message else failed
            bucket.append(Problem(capsule=capsule.name, error=error_name(e),
                                  message=e.message))
    return FolderImport(records=records, skipped=skipped, failed=failed)
