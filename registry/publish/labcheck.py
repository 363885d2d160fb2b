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

from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.base.safeload import loads_json
from registry.errors import InvalidInput

MANIFEST_FORMAT = "neural.download.recipe-publication.v2"
PACKAGE_FORMAT = "b70-model-package-v1"
CATALOG_FORMAT = "b70-reproduction-guide-catalog-v1"


class LabFinding(Frozen):
    """One rule of the lab's validator that the file breaks."""

    rule: str = Field(description="the field the rule is about, e.g. release.assets[3].url")
    message: str = Field(description="the lab validator's message for it")


class LabCheck(Frozen):
    kind: str = Field(description="lab-publication-manifest or lab-package")
    path: str
    format: str | None = None
    status: str | None = Field(None, description="publication_status, or the package's status")
    passed: bool = Field(description="no rule that could be judged here is broken")
    findings: list[LabFinding] = Field(default_factory=empty_list)
    not_checked: list[str] = Field(default_factory=empty_list,
                                   description="rules that need the lab's clone to judge")
    guide_class: str | None = Field(None, description="derived from the guide catalog entry")
    missing: list[str] = Field(default_factory=empty_list,
                               description="gates between the guide class and starter-guide")


def is_lab_file(path: Path) -> bool:
    """Whether `--check PATH` names a lab file (a JSON file) rather than a package folder."""
    return path.is_file()


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


class Rules:
    """Findings gathered while walking a document: `need(ok, rule, message)`."""

    def __init__(self) -> None:
        self.findings: list[LabFinding] = []

    def need(self, ok: bool, rule: str, message: str) -> bool:
        if not ok:
            self.findings.append(LabFinding(rule=rule, message=message))
        return ok
