"""Contributor credit as signed facts of the ledger (`credits/<contributor>/<sha256>.json`,
DSSE, append-only like verifications and claim events): who contributed what, the lab's
intake fields (right to submit, license, patch sha256) and provenance split, and the
status the evidence reaches on the lab's ladder (`acknowledged` → `credited` →
`validated-boost` → `integrated`).

A status is derived, never typed: a fact states one, and writing it is refused, with
the reason, unless the evidence reaches it (a `validated-boost` needs an A/B
verification this ledger holds, decided faster; `integrated` also needs the
contribution's patch among the patches of the record named as `included_in`).
Reading re-derives every fact from the ledger as it is now; a fact whose evidence no
longer reaches its status does not stand, and says why. `registry publish --credit ID`
carries a contributor's standing fact into the package.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field, ValidationError

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen, empty_list
from registry.base.safeload import loads_json
from registry.errors import InvalidInput, NotFound, Refused
from registry.publish.contributors import STATUSES, check_identity, derive, parse_file
from registry.publish.package import Contributor, Intake, Provenance
from registry.store.home import Home

CREDITS = "credits"
PAYLOAD_TYPE = "application/vnd.registry.credit+json"
SCHEMA = "registry.credit/v1"
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,127}\Z")


class CreditFact(Frozen):
    """One signed statement of a contributor's credit, as the ledger keeps it."""

    schema_: str = Field(SCHEMA, alias="schema")
    contributor: str = Field(description="lower-case and hyphenated, as the lab's ids")
    kind: str = Field(description="lab or external")
    profile: str | None = None
    contribution: str
    status: str = Field(description="the status stated; reached by the evidence when written")
    intake: Intake
    provenance: Provenance
    evidence: list[str] = Field(default_factory=empty_list,
                                description="full ids of the verifications it rests on")
    included_in: str | None = Field(None, description="the record whose patch is this "
                                                      "contribution's (integrated)")
    validated_effect: str | None = None
    at: str = Field(description="when it was signed, UTC")


class StoredCredit(Frozen):
    id: str
    signer: str | None
    fact: CreditFact
    derived: str = Field(description="the status the evidence reaches now")
    reason: str
    stands: bool = Field(description="the evidence still reaches the stated status")


def add_credits(home: Home, path: Path) -> list[StoredCredit]:
    """Sign and commit one fact for each `[[contributor]]` of `path` (the TOML
    `registry publish --contributors` reads, plus `included_in = RECORD`): all of
    them, or none when any one's stated status is not reached (Refused, with why)."""
    from registry.store.attestations import add_document
    from registry.store.writer import ready_signer

    entries = [(c, included) for c, included in parse_file(path)]
    facts = [_fact(home, c, included) for c, included in entries]
    signer = ready_signer(home)
    out = []
    for fact in facts:
        doc = add_document(home, f"{CREDITS}/{fact.contributor}", canonical_bytes(fact),
                           PAYLOAD_TYPE, f"credit: {fact.contributor} {fact.status}", signer)
        out.append(StoredCredit(id=doc.id, signer=signer[0], fact=fact, derived=fact.status,
                                reason="reached when signed", stands=True))
    return out


def _fact(home: Home, c: Contributor, included: str | None) -> CreditFact:
    check_identity(c)
    if not SLUG.match(c.id):
        raise InvalidInput(f"contributor {c.id!r}: an id is lower-case letters, digits "
                           "and '-' (the lab's form)")
    if c.stated_status is None:
        raise InvalidInput(f"contributor {c.id}: state the status to record "
                           f"({', '.join(STATUSES)})")
    evidence = _full_ids(home, c.evidence)
    record = _record(home, included) if included else None  # NotFound (5) when unknown
    status, reason, effect = derive(home, c.intake, evidence, _patches(home, record))
    if STATUSES.index(status) < STATUSES.index(c.stated_status):
        raise Refused(f"contributor {c.id}: stated {c.stated_status}, the evidence reaches "
                      f"{status}: {reason}", hint="nothing was recorded; add the evidence "
                      "(an A/B verification of this ledger for a boost) or state less")
    return CreditFact(contributor=c.id, kind=c.kind, profile=c.profile,
                      contribution=c.contribution, status=c.stated_status, intake=c.intake,
                      provenance=c.provenance, evidence=evidence, included_in=record,
                      validated_effect=effect if c.stated_status in STATUSES[2:] else None,
                      at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _full_ids(home: Home, refs: Sequence[str]) -> list[str]:
    """Each evidence prefix as the one verification id it names (else kept as given:
    the derivation then says it is not in this ledger)."""
    from registry.store.verifications import all_verifications

    stored, _ = all_verifications(home)
    out = []
    for ref in refs:
        found = [v.id for v in stored if ref and v.id.startswith(ref)]
        out.append(found[0] if len(found) == 1 else ref)
    return out


def _record(home: Home, prefix: str) -> str:
    from registry.store.query import resolve_id

    return resolve_id(home, prefix)


def _patches(home: Home, record: str | None) -> list[str]:
    """The sha256 of every uncommitted change the record's sources carry (none when the
    record is not here: then no patch of it can be shown to be included)."""
    if record is None:
        return []
    from registry.errors import RegistryError
    from registry.formats.record import parse_statement
    from registry.store.query import checked_statement

    try:
        _, _, data = checked_statement(home, record)
    except RegistryError:
        return []
    return [s.diff_sha256 for s in parse_statement(data).predicate.sources if s.diff_sha256]


def credits(home: Home) -> list[StoredCredit]:
    """Every trusted fact, each re-derived from the ledger as it is now."""
    from registry.signing.signed import Trust
    from registry.store.attestations import read_documents

    out = []
    for doc in read_documents(home, CREDITS, PAYLOAD_TYPE):
        if doc.check.trust != Trust.verified or doc.payload is None:
            continue
        try:
            fact = CreditFact.model_validate(loads_json(doc.payload))
        except (ValueError, ValidationError):
            continue
        status, reason, _ = derive(home, fact.intake, fact.evidence,
                                   _patches(home, fact.included_in))
        stands = STATUSES.index(status) >= STATUSES.index(fact.status) \
            if fact.status in STATUSES else False
        out.append(StoredCredit(id=doc.id, signer=doc.check.signer, fact=fact, derived=status,
                                reason=reason, stands=stands))
    return sorted(out, key=lambda c: (c.fact.contributor, c.fact.at, c.id))


def standing(home: Home, contributor: str) -> StoredCredit:
    """The contributor's standing fact that reaches furthest (the latest of those)."""
    found = [c for c in credits(home) if c.fact.contributor == contributor and c.stands]
    if not found:
        raise NotFound(f"no standing credit for contributor {contributor!r} in this ledger",
                       hint="registry credit add FILE")
    return max(found, key=lambda c: (STATUSES.index(c.fact.status), c.fact.at))


def as_contributor(credit: StoredCredit) -> Contributor:
    """The fact as a package carries it: its status, and the fact that signs it."""
    f = credit.fact
    return Contributor(id=f.contributor, kind=f.kind, profile=f.profile,
                       contribution=f.contribution, status=f.status, stated_status=f.status,
                       reason=credit.reason, validated_effect=f.validated_effect,
                       evidence=f.evidence, intake=f.intake, provenance=f.provenance,
                       credit_fact=credit.id, credit_signer=credit.signer)
