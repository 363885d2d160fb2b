"""Signed documents the ledger only ever adds: verification attestations
(`verifications/<id>.json`) and claim events (`claims/<claim>/<id>.json`), each a DSSE
envelope whose payload's sha256 is the file's name.

Content-addressed names mean two members who add documents at the same time never
write the same path, so a pull replays them side by side; the history check
(registry/store/history.py) refuses any commit that changes or deletes one. A reader
gets every committed document with its signature check: only `verified` ones count.
"""

import re

from registry.base.canonical import is_sha256, sha256_hex
from registry.base.model import Frozen
from registry.errors import InvalidInput, RegistryError
from registry.signing import dsse
from registry.signing.keys import Signer
from registry.signing.signed import SignatureCheck, Trust, check_signed
from registry.store.home import Home
from registry.store.ledger import Ledger
from registry.store.lock import exclusive

VERIFICATIONS = "verifications"
CLAIMS = "claims"
CLAIM_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}\Z")


class SignedDocument(Frozen):
    path: str
    id: str  # the file name: sha256 of the payload
    check: SignatureCheck
    payload: bytes | None = None  # only when the envelope parses
    ledger_commit: str | None = None


def verification_path(doc_id: str) -> str:
    return f"{VERIFICATIONS}/{doc_id}.json"


def claim_folder(claim_id: str) -> str:
    if not CLAIM_ID.match(claim_id):
        raise InvalidInput(f"claim id {claim_id!r}: use lower-case letters, digits, '.', '-' "
                           "and '_' (at most 128)", hint="e.g. lab-laguna-s-21-int4-dflash-tp4")
    return f"{CLAIMS}/{claim_id}"


def add_document(home: Home, folder: str, payload: bytes, payload_type: str, message: str,
                 signer: Signer) -> SignedDocument:
    """Sign `payload` and commit it as `<folder>/<sha256>.json` under the home lock (a
    document already committed is not committed again)."""
    from registry.store.trust import appended

    keyid, key = signer
    doc_id = sha256_hex(payload)
    path = f"{folder}/{doc_id}.json"
    envelope = dsse.envelope_bytes(dsse.sign(payload, keyid, key, payload_type))
    with exclusive(home.lock_file):
        ledger = Ledger(home.ledger)
        ledger.recover()
        if path not in ledger.tree_files(path):
            before = ledger.head()
            commit = ledger.commit({path: envelope}, message, signer)
            appended(home, before, commit)
        commit = ledger.last_commit(path)
    return SignedDocument(path=path, id=doc_id, payload=payload, ledger_commit=commit,
                          check=SignatureCheck(trust=Trust.verified, signer=keyid))


def read_documents(home: Home, folder: str, payload_type: str) -> list[SignedDocument]:
    """Every committed document under `folder` (recursively), each checked against the
    home's keyring: its envelope signs a payload that hashes to its name, under a key
    that may sign records and is not revoked."""
    from registry.store.trust import current_keyring

    ledger = Ledger(home.ledger)
    tree = {p: sha for p, sha in ledger.tree_files(folder).items() if p.endswith(".json")}
    if not tree:
        return []
    blobs = ledger.blobs(list(tree.values()))
    keyring = current_keyring(home).current
    out = []
    for path, sha in sorted(tree.items()):
        name = path.rsplit("/", 1)[-1].removesuffix(".json")
        envelope = blobs.get(sha)
        payload = _payload(envelope)
        if not is_sha256(name):
            check = SignatureCheck(trust=Trust.invalid, detail=f"{path}: not a document name")
        else:
            check = check_signed(payload, envelope, expected_id=name, keyring=keyring,
                                 payload_type=payload_type)
        out.append(SignedDocument(path=path, id=name, check=check, payload=payload))
    return out


def _payload(envelope: bytes | None) -> bytes | None:
    if envelope is None:
        return None
    try:
        return dsse.parse_envelope(envelope).payload_bytes()
    except RegistryError:
        return None
