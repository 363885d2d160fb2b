"""A published package (`registry.package/v1`): what a stranger needs to run a record
again, every input pinned by sha256 or a full commit, and nothing of the host it came
from. `package.json` beside the recipe and suite files it pins, and `package.dsse.json`,
a DSSE envelope of its canonical bytes signed by the publisher's key.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from registry.base.model import Frozen, empty_list
from registry.publish.profile import PerformanceProfile

SCHEMA: Final = "registry.package/v1"
MANIFEST: Final = "package.json"
SIGNATURE: Final = "package.dsse.json"
PAYLOAD_TYPE: Final = "application/vnd.registry.package+json"
COMMANDS: Final = ("preflight", "launch", "health", "benchmark", "stop")


class Finding(Frozen):
    """One thing a check found wrong with a package, by a stable code."""

    code: str = Field(description="e.g. host_path, model_revision_unpinned, asset_hash_mismatch")
    detail: str


class Pinned(Frozen):
    """A file of the package (or of a model), by path and digest."""

    path: str
    sha256: str
    size: int | None = None


class Upstream(Frozen):
    """Source that lives elsewhere: a git repository at a full commit."""

    name: str
    url: str | None = Field(None, description="where to fetch it; None when unknown")
    commit: str | None = Field(None, description="the full 40-hex commit")
    tag: str | None = Field(None, description="a tag that must still name the commit")


class Asset(Frozen):
    """A release file fetched by URL, checked by size and sha256."""

    name: str
    kind: str
    url: str
    size: int
    sha256: str


class ModelPin(Frozen):
    hub_id: str | None = None
    revision: str | None = Field(None, description="the hub commit (40 hex)")
    manifest_sha256: str | None = Field(None, description="digest of the release files")
    files: list[Pinned] = Field(default_factory=empty_list)


class EnginePin(Frozen):
    name: str
    version: str | None = None
    source: Upstream | None = None
    patches: list[Pinned] = Field(default_factory=empty_list)


class ContainerPin(Frozen):
    image: str = Field(description="image reference by digest (…@sha256:<64 hex>)")
    runtime: str | None = None


class PackagedFigure(Frozen):
    suite: str
    metric: str
    value: float
    low: float | None = None
    high: float | None = None
    unit: str | None = None
    quality: str | None = Field(None, description="the suite's measurement quality")


class PackagedOutput(Frozen):
    """What one prompt of the suite produced at temperature 0: the digest of its token
    ids, so that a re-run can say whether it produced the same (registry/publish/rerun.py)."""

    suite: str
    index: int
    prompt_id: str
    tokens: int
    sha256: str = Field(description="sha256 of the token ids, comma-separated decimal")


class Intake(Frozen):
    """What the lab's intake asks of a contribution (unknowns stay unknown: None)."""

    right_to_submit: bool | None = None
    license: str | None = None
    patch_sha256: str | None = None


class Provenance(Frozen):
    """The lab's provenance split: who did which part."""

    lab: str | None = None
    contributor_delta: str | None = None
    third_party: str | None = None
    lab_follow_up: str | None = None


class Contributor(Frozen):
    id: str
    kind: str = Field(description="lab or external")
    profile: str | None = None
    contribution: str = ""
    status: str = Field(description="derived: acknowledged, credited, validated-boost or "
                                    "integrated, as far as the evidence reaches")
    stated_status: str | None = Field(None, description="what the contributor file says")
    reason: str = Field("", description="why the derived status is what it is")
    validated_effect: str | None = Field(None, description="the A/B boost, when one decides")
    evidence: list[str] = Field(default_factory=empty_list)
    intake: Intake = Field(default_factory=Intake)
    provenance: Provenance = Field(default_factory=Provenance)
    credit_fact: str | None = Field(None, description="the ledger's signed credit fact "
                                                      "(registry/publish/credits.py)")
    credit_signer: str | None = Field(None, description="the key that signed that fact")


class PromotionRef(Frozen):
    verification: str
    promoted: bool
    policy: str


class Package(Frozen):
    schema_: str = Field(SCHEMA, alias="schema")
    record: str = Field(description="the record id it was published from")
    name: str
    lane: str
    recipe: Pinned
    suites: list[Pinned] = Field(default_factory=empty_list)
    model: ModelPin
    engine: EnginePin
    container: ContainerPin | None = None
    launcher: Pinned | None = None
    figures: list[PackagedFigure] = Field(default_factory=empty_list)
    outputs: list[PackagedOutput] = Field(default_factory=empty_list)
    profiles: list[PerformanceProfile] = Field(default_factory=empty_list)
    promotion: PromotionRef | None = None
    contributors: list[Contributor] = Field(default_factory=empty_list)
    assets: list[Asset] = Field(default_factory=empty_list)
    commands: dict[str, str]
    signer: str = Field(description="the key id that signs package.dsse.json")
