"""A lab file checked the way the lab's own validators check it: a recipe publication
manifest (`neural.download.recipe-publication.v2`, the lab's
`tools/validate-recipe-publication.py` @d8a01013) or a model package
(`b70-model-package-v1`, `tools/validate-repro-guides.py` @19e9587a), told apart by
the `format` they declare (or, failing that, by their file name).

Each finding carries the lab's own message for the rule it breaks. The lab runs its
validators inside its clone; rules that read the clone (a path tracked by git, a blob
at the source commit, a dependency that resolves) cannot be judged from the file
alone and are listed under `not_checked`, never passed.
"""

from __future__ import annotations

from pathlib import Path

from registry.base.safeload import loads_json
from registry.errors import InvalidInput
from registry.publish.labrules import MANIFEST_FORMAT, PACKAGE_FORMAT, LabCheck


def is_lab_file(path: Path) -> bool:
    """Whether `--check PATH` names a lab file rather than a package: a file that is not
    a registry package's own `package.json` (that one means its folder)."""
    from registry.publish.package import SCHEMA

    if not path.is_file():
        return False
    try:
        raw = loads_json(path.read_bytes())
    except (OSError, ValueError):
        return True  # check_lab_file says what is wrong with it
    return not (isinstance(raw, dict) and raw.get("schema") == SCHEMA)


def check_lab_file(path: Path, *, catalog: Path | None = None) -> LabCheck:
    """Check the lab file at `path`; `catalog`: the lab's `repro/guide-catalog.json`, to
    hold a package against its entry and derive its guide class."""
    from registry.publish.labmanifest import check_manifest
    from registry.publish.labpackage import check_package_json

    raw = read_json(path)
    declared = raw.get("format") if isinstance(raw, dict) else None
    if declared == MANIFEST_FORMAT or (declared != PACKAGE_FORMAT
                                       and path.name == "publication-manifest.json"):
        return check_manifest(path, raw)
    if declared == PACKAGE_FORMAT or path.name == "package.json":
        return check_package_json(path, raw, None if catalog is None else read_json(catalog))
    raise InvalidInput(f"{path}: neither a lab publication-manifest.json ({MANIFEST_FORMAT}) "
                       f"nor a lab package.json ({PACKAGE_FORMAT})",
                       hint="give a package folder, or one of the lab's files")


def read_json(path: Path) -> object:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidInput(f"{path}: {e.strerror or 'cannot read'}") from None
    try:
        return loads_json(data)
    except ValueError as e:
        raise InvalidInput(f"{path}: not JSON ({e})") from None
