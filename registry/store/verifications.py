"""Verification attestations as stored: `verifications/<id>.json` in the ledger, a DSSE
envelope of the in-toto statement (registry/formats/verification.py), one signed
commit each, and the two calls every writer and reader uses: `seal_verification` and
`verifications_of`.

An attestation counts only when a key this home trusts signed it, its payload hashes
to its name, it parses as a verification and every record it names is committed here;
anything else is listed by `check_verifications` (what `verify --all` reports) and never
shown as a verification.
"""

from collections.abc import Callable

from registry.base.model import Frozen
from registry.errors import Failure, RegistryError
from registry.formats.display import short_id
from registry.formats.verification import (
    VerificationStatement,
    parse_verification,
    verification_bytes,
)
from registry.signing.dsse import PAYLOAD_TYPE
from registry.signing.keys import Signer
from registry.signing.signed import Trust
from registry.store.attestations import VERIFICATIONS, SignedDocument, add_document, read_documents
from registry.store.home import Home
from registry.store.ledger import committed_ids


class StoredVerification(Frozen):
    id: str
    signer: str
    ledger_commit: str | None = None
    statement: VerificationStatement


class VerificationProblem(Frozen):
    id: str
    detail: str
    failure: Failure


def seal_verification(home: Home, statement: VerificationStatement,
                      signer: Signer | None = None) -> StoredVerification:
    """Sign `statement` with the home's signing key (refused unless the keyring lets it
    sign) and commit it; the records it names must be committed here."""
    from registry.errors import NotFound
    from registry.store.writer import ready_signer

    keyid, key = ready_signer(home, signer)
    missing = sorted(set(statement.judged()) - set(committed_ids(home.ledger)))
    if missing:
        raise NotFound(f"verification names record {short_id(missing[0])}, which is not in this "
                       "ledger", hint="seal or pull the record first")
    data = verification_bytes(statement)
    p = statement.predicate
    judged = ", ".join(f"{role} {short_id(rid)}" for role, rid in sorted(p.records.items()))
    message = f"verification: {p.policy.name} {p.result.value}\n\n{judged}"
    doc = add_document(home, VERIFICATIONS, data, PAYLOAD_TYPE, message, (keyid, key))
    return StoredVerification(id=doc.id, signer=keyid, ledger_commit=doc.ledger_commit,
                              statement=statement)


def seal_if_signer(home: Home, build: Callable[[str], VerificationStatement]
                   ) -> tuple[str | None, str | None]:
    """(the sealed attestation's id, None), or (None, why not) when this home's key may not
    sign: a reader may judge (review, promote) without being a signer. `build` makes the
    statement for the signing key id."""
    from registry.store.writer import ready_signer

    try:
        signer = ready_signer(home)
    except RegistryError as e:
        return None, e.message
    return seal_verification(home, build(signer[0]), signer).id, None


def all_verifications(home: Home) -> tuple[list[StoredVerification], list[VerificationProblem]]:
    """Every trusted attestation, and a problem for each committed one that is not."""
    documents = list(read_documents(home, VERIFICATIONS, PAYLOAD_TYPE))
    records = set(committed_ids(home.ledger)) if documents else set()  # `show` lists none
    good, bad = [], []
    for doc in documents:
        checked = _checked(doc, records)
        if isinstance(checked, VerificationProblem):
            bad.append(checked)
        else:
            good.append(checked)
    good.sort(key=lambda v: (v.statement.predicate.time_verified, v.id))
    return good, bad


def verifications_of(home: Home, record_id: str) -> list[StoredVerification]:
    """The trusted attestations that judged `record_id` (a full id), oldest first."""
    good, _ = all_verifications(home)
    return [v for v in good if record_id in v.statement.judged()]


def check_verifications(home: Home) -> list[VerificationProblem]:
    """What `verify --all` reports: each committed attestation that does not count."""
    return all_verifications(home)[1]


def _checked(doc: SignedDocument, records: set[str]) -> StoredVerification | VerificationProblem:
    if not doc.check.ok or doc.payload is None or doc.check.signer is None:
        return VerificationProblem(id=doc.id, detail=f"{doc.path} is {doc.check.trust.value}: "
                                   f"{doc.check.detail}",
                                   failure=Failure.unverifiable
                                   if doc.check.trust is Trust.untrusted else Failure.wrong)
    try:
        statement = parse_verification(doc.payload)
    except RegistryError as e:
        return VerificationProblem(id=doc.id, detail=f"{doc.path}: {e.message}",
                                   failure=Failure.wrong)
    unknown = sorted(set(statement.judged()) - records)
    if unknown:
        return VerificationProblem(id=doc.id, detail=f"{doc.path} judges record "
                                   f"{short_id(unknown[0])}, which is not in the ledger",
                                   failure=Failure.unverifiable)
    return StoredVerification(id=doc.id, signer=doc.check.signer, statement=statement)
