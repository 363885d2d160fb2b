"""A record's statement: an in-toto Statement v1 whose predicate describes one run.

The statement is stored and signed as RFC 8785 canonical JSON; the record id is the
sha256 of those exact bytes. Subjects are every sealed artifact with its sha256; the
predicate (`https://registry.dev/serving-record/v1`, documented in docs/records.md)
binds them to the recipe, the resolved identity with its evidence, the source trees,
the environment and the results. Diff, contracts and reproduce read these models.
"""

from typing import Any, Final, Literal

from pydantic import Field, ValidationError

from registry.base.canonical import canonical_bytes, sha256_hex
from registry.base.model import Frozen, empty_list
from registry.base.redaction import Redaction
from registry.base.safeload import loads_json
from registry.base.versions import WIRE, refuse_newer
from registry.errors import NotFound, VerificationFailed
from registry.formats.display import identity, precision
from registry.formats.figures import SuiteResult as SuiteResult  # where its readers find it
from registry.formats.identity import ResolvedIdentity
from registry.formats.runfacts import Environment as HostFacts
from registry.formats.runfacts import RunState
from registry.formats.unproven import Unproven, mark
from registry.formats.verdict import Verdict

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://registry.dev/serving-record/v1"
UNPROVEN: Final = "UNPROVEN "  # leads the summary of a record whose evidence proves nothing


class Subject(Frozen):
    name: str = Field(description="the artifact's path within the record")
    digest: dict[str, str] = Field(description='{"sha256": hex}')

    @property
    def sha256(self) -> str:
        return self.digest["sha256"]


OUTSIDE = "outside"
"""A source's root when its absolute path lay under none of the run's roots."""


class Source(Frozen):
    """The state of one source tree the run came from."""

    role: str = Field(description="recipe | engine | launcher")
    path: str = Field(description="relative to `root`; absolute in records sealed before "
                                  "roots (root None)")
    root: str | None = Field(None, description=(
        "what `path` is relative to: run | recipe | models | model (registry/seal/roots.py); "
        "`outside`: under none of them, `path` is its base name only"))
    commit: str | None = Field(None, description="HEAD commit; None when not a git tree")
    branch: str | None = Field(None, description="None on a detached HEAD")
    remote: str | None = Field(None, description="URL of the branch's remote, else `origin`")
    dirty: bool | None = Field(None, description="uncommitted changes (untracked files count)")
    diff_sha256: str | None = Field(None, description="sha256 of the uncommitted diff")
    diff_artifact: str | None = Field(None, description="subject holding that diff")
    version: str | None = Field(None, description="installed distribution version, if any")
    sha256: str | None = Field(None, description="a lone file outside any git tree: its digest")
    note: str | None = None

    @property
    def shown_path(self) -> str:
        """The path as views print it: `<root>/path`, or the old absolute path."""
        if self.root is None:
            return self.path
        return f"<{self.root}>" if self.path == "." else f"<{self.root}>/{self.path}"


class ContractInfo(Frozen):
    """The recipe's quality contract; `verdict` is filled by the contracts module."""

    name: str
    teacher: str | None = None
    verdict: Verdict | None = None


class Imported(Frozen):
    """Provenance of a record imported from a lab capsule rather than run here."""

    capsule: str = Field(description="the capsule directory's name")
    manifest: str | None = Field(None, description="subject holding the capsule's sha256 "
                                 "manifest; None: the capsule has none")
    manifest_sha256: str | None = None
    verified: list[str] = Field(description="manifest entries present and matching")
    missing: list[str] = Field(description="manifest entries absent from the capsule")
    unlisted: list[str] = Field(default_factory=empty_list,
                                description="run files present but not in the manifest")
    importer: str = Field(description="key id of the importer who signed this record")
    lab_identity: dict[str, str] = Field(default_factory=dict,
                                         description="the lab's identity.txt, as key = value")
    # --- capsules of any layout (registry/importer) ---
    arm: str | None = Field(None, description="this record's arm (folder) within the capsule")
    arms: list[str] = Field(default_factory=empty_list,
                            description="every arm imported from the capsule, this one included")
    evidence_sha256: str | None = Field(None, description="digest of the arm's evidence: "
                                        "the same evidence imports as the same record")
    declared_by: dict[str, str] = Field(default_factory=dict,
                                        description="identity field -> the capsule file that "
                                                    "declared it")


# --- published figures (registry/importer): what a lab published beside what its rows give ---

class PublishedFigure(Frozen):
    """A figure the lab published (a summary JSON, a claim) and, where the capsule holds
    the raw rows, the same figure re-derived from them with the named formula."""

    source: str = Field(description="capsule file that publishes it")
    key: str = Field(description="where in that file (a JSON path)")
    metric: str = Field(description="e.g. decode_tok_s, ttft_ms")
    aggregation: str = Field(description="median | mean | p10 | median-of-prompt-class-medians"
                                         " | claim")
    formula: str | None = Field(None, description="per-row formula, e.g. 100 / (t[99] - t[0])")
    value: float
    rederived: float | None = Field(None, description="the same aggregation over the raw rows")
    rows: int = Field(0, description="rows that contributed to `rederived`")
    agrees: bool | None = Field(None, description="within 1e-9 relative; None: not re-derivable")
    note: str | None = None


class Override(Frozen):
    """An identity mismatch the sealer allowed explicitly."""

    field: str
    reason: str
    declared: Any = None
    resolved: Any = None


class RunInfo(Frozen):
    state: RunState = Field(description="complete | failed | unknown (no status.json)")
    reason: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    sealed_at: str = Field(description="UTC ISO-8601 time of sealing")


class Environment(Frozen):
    host: HostFacts | dict[str, Any] = Field(
        default_factory=dict, description="environment.json: the executor's typed host facts, "
                                          "or another lab's facts as captured")
    variables: dict[str, str] = Field(default_factory=dict, description="engine environment")
    sealed_with: dict[str, str] = Field(default_factory=dict, description="sealing tool versions")

    def host_facts(self) -> dict[str, Any]:
        """The host facts as plain JSON, whichever shape they were sealed in."""
        if isinstance(self.host, HostFacts):
            return self.host.model_dump(mode="json", by_alias=True)
        return self.host


class Predicate(Frozen):
    recipe: dict[str, Any] | None = Field(None, description="the normalized recipe")
    recipe_sha256: str | None = Field(None, description="canonical digest of `recipe`")
    identity: ResolvedIdentity
    sources: list[Source] = Field(default_factory=empty_list)
    environment: Environment = Field(default_factory=Environment)
    results: list[SuiteResult] = Field(default_factory=empty_list)
    contract: ContractInfo | None = None
    parent: str | None = Field(None, description="record id this run reproduces")
    imported: Imported | None = None
    overrides: list[Override] = Field(default_factory=empty_list)
    unproven: Unproven | None = Field(None, description="sealed although its evidence proves "
                                      "nothing: why (registry/seal/proof.py)")
    run: RunInfo
    artifacts: dict[str, str] = Field(default_factory=dict, description="role -> subject name")
    published: list[PublishedFigure] = Field(default_factory=empty_list,
                                             description="the lab's own figures (imports)")
    redactions: list[Redaction] | None = Field(
        None, description="secrets taken out before anything was hashed: where and why "
        "(registry/base/secrets.py); absent when there were none")


class Statement(Frozen):

    type_: Literal["https://in-toto.io/Statement/v1"] = Field(STATEMENT_TYPE, alias="_type")
    subject: list[Subject]
    predicateType: Literal["https://registry.dev/serving-record/v1"] = PREDICATE_TYPE
    predicate: Predicate

    def subject_named(self, name: str) -> Subject | None:
        return next((s for s in self.subject if s.name == name), None)


def statement_bytes(statement: Statement) -> bytes:
    return canonical_bytes(statement)


def record_id(data: bytes) -> str:
    return sha256_hex(data)


def match_id(prefix: str, candidates: list[str]) -> str:
    """The one id starting with `prefix` (at least 4 digits, as git resolves short hashes)."""
    found = [c for c in candidates if c.startswith(prefix.lower())]
    if not found:
        raise NotFound(f"no record {prefix}", hint="registry list shows the records")
    if len(prefix) < 4:
        raise NotFound(f"record id prefix {prefix!r} is too short",
                       hint="give at least 4 hex digits")
    if len(found) > 1:
        listing = ", ".join(c[:16] for c in found[:10])
        raise NotFound(f"record id {prefix} is ambiguous: {listing}", hint="give more digits")
    return found[0]


def parse_statement(data: bytes) -> Statement:
    """The statement in signed bytes: fields a newer registry added are kept, a newer
    major predicate version is refused (docs/formats.md)."""
    try:
        document = loads_json(data)
        refuse_newer(document, "predicateType", "https://registry.dev/serving-record/", 1,
                     "statement")
        return Statement.model_validate(document, extra=WIRE)
    except (ValueError, ValidationError) as e:
        first = str(e).splitlines()[0]
        raise VerificationFailed(f"statement: not a serving record ({first})") from None


def summary_line(predicate: Predicate) -> str:
    """One line naming what ran: lane, architecture, precisions, parallelism, engine (its
    whole version or commit: identity values are never shortened, formats/display.py)."""
    v = predicate.identity.value
    lane = (predicate.recipe or {}).get("lane") or "-"
    engine = v("engine.commit") or v("engine.version")
    unproven = UNPROVEN if mark(predicate.unproven, predicate.identity) else ""
    return (f"{unproven}{lane}: {identity(v('model.architecture'))} "
            f"weights={precision(v('precision.weights'), v('precision.activations'))} "
            f"kv={identity(v('precision.kv_cache'))} tp={identity(v('parallel.tensor'))} "
            f"engine={identity(engine)}")
