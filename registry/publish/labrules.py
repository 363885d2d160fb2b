"""The result of checking a lab file by its own validator's rules (registry/publish/labcheck.py):
each broken rule with the lab's message, and what could not be judged without the lab's
clone; and the small walker that gathers findings."""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen, empty_list

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


class Rules:
    """Findings gathered while walking a document: `need(ok, rule, message)`."""

    def __init__(self) -> None:
        self.findings: list[LabFinding] = []

    def need(self, ok: bool, rule: str, message: str) -> bool:
        if not ok:
            self.findings.append(LabFinding(rule=rule, message=message))
        return ok
