"""The claim as signed: its body (figure, metric, claimant, claimed identity, evidence
references), its lifecycle states, and the events that move it (one signed ledger
document each, chained by digest)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import Field

from registry.base.model import Frozen
from registry.formats.metricwords import ClaimMetric

EVENT_SCHEMA: Final = "registry.claim-event/v1"
EVENT_PAYLOAD_TYPE: Final = "application/vnd.registry.claim-event+json"


class State(StrEnum):
    """The lab's lifecycle words, unchanged (docs/claims.md)."""

    submitted = "submitted"
    queued = "queued"
    reproducing = "reproducing"
    confirmed = "confirmed"
    confirmed_adjusted = "confirmed-adjusted"  # real, but the verified figure is another
    refuted = "refuted"  # kept with its evidence, never deleted
    stale = "stale"  # was true; software or model moved on
    lab_verified = "lab-verified"  # the lab's own measurement


class ClaimedIdentity(Frozen):
    """What the claim says ran, on the confirmation axes (None: not stated)."""

    model: str | None = Field(None, description="model name, e.g. Laguna-S-2.1")
    checkpoint: str | None = Field(None, description="checkpoint manifest sha256 or revision")
    quantization: str | None = Field(None, description="weight quantization, e.g. INT4 W4A16")
    kv_cache: str | None = None
    engine: str | None = Field(None, description="runtime, e.g. vllm-xpu, llama.cpp-sycl")
    engine_version: str | None = Field(None, description="version or commit (prefix)")
    patch: str | None = Field(None, description="sha256 of the engine tree's diff, or `none`")
    speculative: str | None = Field(None, description="e.g. MTP3, DFlash n=7; `none`")
    hardware: str | None = Field(None, description="accelerator, e.g. B70, H200, cpu")
    cards: int | None = None
    tp: int | None = None
    quality_gate: str | None = Field(None, description="the contract that must pass, e.g. "
                                                       "bitwise-teacher")


class ClaimedFigure(Frozen):
    value: float
    unit: str = "tok/s"
    metric: ClaimMetric
    by: str = Field(description="the claimant (`lab` for the lab's own)")
    date: str | None = Field(None, description="as the claimant wrote it")


class LabFigure(Frozen):
    """A figure the lab published as its verification, as it wrote it."""

    value: float | None = None
    metric: ClaimMetric | None = None
    date: str | None = None
    evidence: str | None = Field(None, description="repository path the lab names")


class LabEntry(Frozen):
    date: str | None = None
    event: str


REDERIVED = "registry_rederived"  # in LabSource.raw: the packet's rows re-derived at import


class LabSource(Frozen):
    """Where an imported claim came from: the lab's file, byte for byte."""

    path: str = Field(description="the claim file, relative to what was imported")
    sha256: str = Field(description="of the claim file's bytes")
    repository: str | None = Field(None, description="upstream repository, when stated")
    commit: str | None = Field(None, description="the lab checkout's commit, when a git tree")
    status: str = Field(description="the lab's status word, verbatim")
    history: list[LabEntry] = Field(description="the lab's history, in the file's order")
    verification: LabFigure | None = None
    raw: dict[str, Any] = Field(default_factory=dict, description="the lab's other fields; "
                                "`registry_rederived`: the registry's re-derivation of its "
                                "figures from the packet's rows at import (claims/packet.py)")


class ClaimBody(Frozen):
    id: str
    model: str | None = None
    claimed: ClaimedFigure
    identity: ClaimedIdentity
    evidence: list[str] = Field(default_factory=list, description="evidence references")
    submitter: str | None = Field(None, description="URL of the claimant")
    records: list[str] = Field(default_factory=list,
                               description="records sealed from the claim's own evidence")
    lab: LabSource | None = Field(None, description="set when imported from a lab's file")


class EventKind(StrEnum):
    created = "created"  # `claim add`
    imported = "imported"  # `claim import`: the lab's statement, attributed to it
    advanced = "advanced"  # `claim advance`


class ClaimEvent(Frozen):
    """One state change, signed; `previous` chains it to the event before it."""

    schema_: Literal["registry.claim-event/v1"] = Field(EVENT_SCHEMA, alias="schema")
    claim: str
    seq: int = Field(ge=0)
    previous: str | None = Field(None, description="sha256 of the previous event's payload")
    kind: EventKind
    time: str = Field(description="UTC ISO-8601")
    actor: str = Field(description="key id that signs the event")
    state: State
    body: ClaimBody | None = Field(None, description="created / imported events only")
    verification: str | None = Field(None, description="the attestation the move rests on")
    record: str | None = Field(None, description="the record whose identity was matched")
    figure: float | None = Field(None, description="the verified figure the move rests on")
    moved: dict[str, str] = Field(default_factory=dict, description="stale: axis -> now")
    note: str | None = None
