"""The keyring: which keys a ledger's records and commits may be signed by.

Modelled on TUF's root metadata. The ledger keeps every version of the keyring,
`keyring/<N>.json`, each a DSSE envelope over the canonical JSON of a `Keyring`.
Version N+1 is valid only if it is signed by a threshold of the root keys of version
N *and* a threshold of its own root keys; version 1 by a threshold of the roots the
home pinned. Versions only go up and are never changed once committed. What a home
trusts is therefore decided by its pin (registry/store/trust.py), kept outside the
ledger: no ledger commit alone can add a key.

Key ids are always computed from the key (sha256 of the raw public key), never read
from a file name or a signature's claim. Keys leave a keyring in one of two ways:
*retired* (rotation: records it signed while active stay valid) or *revoked*: never
trusted again, and either from that version on (what it signed before, which the signed
history places before the revocation, still verifies, marked as signed by a key since
revoked) or, when `compromised`, for everything it ever signed.
"""

import re
from enum import StrEnum
from functools import cached_property
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import ConfigDict, Field, ValidationError

from registry.base.canonical import canonical_bytes, sha256_hex
from registry.base.model import Frozen, empty_list
from registry.base.safeload import loads_json
from registry.base.versions import WIRE, refuse_newer
from registry.errors import NewerFormat, RegistryError
from registry.formats.display import short_id
from registry.signing import dsse
from registry.signing.failures import (
    KeyringConflict,
    Malformed,
    MissingVersion,
    Revoked,
    RolledBack,
    ThresholdNotMet,
)
from registry.signing.keys import Signer, key_id, load_public_pem

PAYLOAD_TYPE = "application/vnd.registry.keyring+json"
FOLDER = "keyring"
VERSION_FILE = re.compile(rf"{FOLDER}/([1-9][0-9]{{0,8}})\.json\Z")


# A keyring version is re-signed from the one before it: fields a newer registry added
# are kept through the edit, as TUF keeps unrecognized fields (docs/formats.md).
OPEN = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


class Role(StrEnum):
    root = "root"  # signs keyring versions
    signer = "signer"  # signs records, teacher bindings and ledger commits


class KeyEntry(Frozen):
    model_config = OPEN
    public: str = Field(description="PEM (SubjectPublicKeyInfo) of an Ed25519 key")
    roles: list[Role] = Field(default_factory=empty_list)
    name: str | None = None

    @cached_property
    def keyid(self) -> str:
        return key_id(self.key)

    @cached_property
    def key(self) -> Ed25519PublicKey:
        return load_public_pem(self.public.encode(), "keyring entry")


class Departed(Frozen):
    """A key that left the keyring, when and why."""

    model_config = OPEN

    public: str
    version: int = Field(description="the keyring version that removed it")
    reason: str
    compromised: bool | None = Field(None, description=(
        "a revocation only: true, nothing the key ever signed is trusted; false, what it "
        "signed before `version` still is; absent (written before this field), true"))

    @cached_property
    def keyid(self) -> str:
        return key_id(load_public_pem(self.public.encode(), "keyring entry"))

    @property
    def voids_past(self) -> bool:
        """Whether a revocation untrusts what the key signed before it too (a revocation
        from before `compromised` existed meant exactly that)."""
        return self.compromised is not False


class Keyring(Frozen):
    model_config = OPEN
    type_: Literal["registry.keyring/v1"] = Field("registry.keyring/v1", alias="_type")
    version: int = Field(ge=1)
    threshold: int = Field(1, ge=1, description="root signatures a new version needs")
    keys: list[KeyEntry]
    retired: list[Departed] = Field(default_factory=empty_list)
    revoked: list[Departed] = Field(default_factory=empty_list)


    def with_role(self, role: Role) -> dict[str, Ed25519PublicKey]:
        return {k.keyid: k.key for k in self.keys if role in k.roles}

    @property
    def roots(self) -> dict[str, Ed25519PublicKey]:
        return self.with_role(Role.root)

    def entry(self, keyid: str) -> KeyEntry | None:
        return next((k for k in self.keys if k.keyid == keyid), None)

    def revocation(self, keyid: str) -> Departed | None:
        return next((d for d in self.revoked if d.keyid == keyid), None)

    def record_keys(self) -> dict[str, Ed25519PublicKey]:
        """Keys whose signatures on records count: active signers, retired keys and keys
        revoked from a version on (the signed history proves when their records were
        added: verify and pull check it)."""
        keys = self.with_role(Role.signer)
        for d in (*self.retired, *(r for r in self.revoked if not r.voids_past)):
            keys.setdefault(d.keyid, load_public_pem(d.public.encode(), "keyring entry"))
        return keys


def file_name(version: int) -> str:
    return f"{FOLDER}/{version}.json"


def keyring_bytes(keyring: Keyring) -> bytes:
    return canonical_bytes(keyring)


def sign_version(keyring: Keyring, signers: list[Signer]) -> bytes:
    """The envelope file of a keyring version signed by every key in `signers`."""
    payload = keyring_bytes(keyring)
    envelopes = [dsse.sign(payload, keyid, key, PAYLOAD_TYPE) for keyid, key in signers]
    merged = envelopes[0].model_copy(update={
        "signatures": [s for e in envelopes for s in e.signatures]})
    return dsse.envelope_bytes(merged)


def compose(theirs: Keyring, before: Keyring, after: Keyring) -> Keyring:
    """The change from `before` to `after` (keys trusted or given roles, retired,
    revoked; a new threshold) made again on top of `theirs`, as its next version: how
    a keyring version made here while others pushed is replayed on theirs. A key that
    `theirs` revoked stays revoked."""
    version = theirs.version + 1
    was = {k.keyid: k for k in before.keys}
    keys = {k.keyid: k for k in theirs.keys}
    gone = {d.keyid for d in (*theirs.retired, *theirs.revoked)}
    for entry in after.keys:
        if (prior := was.get(entry.keyid)) is None or prior.model_dump() != entry.model_dump():
            if revoked := theirs.revocation(entry.keyid):
                raise KeyringConflict(f"key {short_id(entry.keyid)} was revoked on the other side "
                                      f"({revoked.reason}); a revoked key is never trusted "
                                      "again")
            keys[entry.keyid] = entry
    for keyid in was.keys() - {k.keyid for k in after.keys}:
        keys.pop(keyid, None)
    departed = {}
    for field in ("retired", "revoked"):
        old = {d.keyid for d in getattr(before, field)}
        skip = gone if field == "retired" else {d.keyid for d in theirs.revoked}
        departed[field] = [*getattr(theirs, field), *(
            d.model_copy(update={"version": version}) for d in getattr(after, field)
            if d.keyid not in old and d.keyid not in skip)]
    departed["revoked"] = _escalated(departed["revoked"], after)
    now_revoked = {d.keyid for d in departed["revoked"]}  # a retired key revoked since
    departed["retired"] = [d for d in departed["retired"] if d.keyid not in now_revoked]
    for d in departed["revoked"]:
        keys.pop(d.keyid, None)
    threshold = after.threshold if after.threshold != before.threshold else theirs.threshold
    return theirs.model_copy(update={"version": version, "threshold": threshold,
                                     "keys": list(keys.values()), **departed})


def _escalated(revoked: list[Departed], after: Keyring) -> list[Departed]:
    """Revocations the other side made from a version on, which this side found
    compromised: made compromised (a revocation only ever widens)."""
    here = {d.keyid for d in after.revoked if d.voids_past}
    return [d.model_copy(update={"compromised": True}) if d.keyid in here and not d.voids_past
            else d for d in revoked]


class Pin(Frozen):
    """What a home trusts before reading the ledger (a version and its digest, or only
    root key ids when the home has not yet seen any version)."""

    roots: list[str]
    threshold: int = 1
    version: int = 0
    sha256: str | None = None


class Chain(Frozen):
    """The verified keyring versions, oldest first, and the current one."""

    versions: dict[int, Keyring]
    digests: dict[int, str]

    @property
    def current(self) -> Keyring:
        return self.versions[max(self.versions)]


def verify_chain(files: dict[int, bytes], pin: Pin) -> Chain:
    """Every keyring version from the pinned one up, or a typed failure
    (registry.signing.failures) naming the first version that does not follow."""
    if not files:
        raise MissingVersion("keyring: the ledger has no keyring",
                             hint="a ledger starts with `registry init` and a signing key")
    top = max(files)
    if top < pin.version:
        raise RolledBack(f"keyring: version {top} is older than version {pin.version} "
                         "this home already verified (rolled back)")
    missing = [v for v in range(1, top + 1) if v not in files]
    if missing:
        raise MissingVersion(f"keyring: version {missing[0]} is missing")
    versions: dict[int, Keyring] = {}
    digests = {v: sha256_hex(data) for v, data in files.items()}
    if pin.version and digests[pin.version] != pin.sha256:
        raise RolledBack(f"keyring: version {pin.version} is not the one this home "
                         "verified (its bytes changed)")
    previous: Keyring | None = None
    for version in range(1, top + 1):
        keyring = _parse(files[version], version)
        versions[version] = keyring
        if version > pin.version:
            _check_signed(files[version], keyring, previous, pin)
        if previous is not None:
            _revocations_kept(keyring, previous)
        previous = keyring
    return Chain(versions=versions, digests=digests)


def _revocations_kept(keyring: Keyring, previous: Keyring) -> None:
    """A revoked key stays revoked in every later version: still listed, never a key
    again (a root that could undo a revocation would make it mean nothing)."""
    where = file_name(keyring.version)
    listed = {d.keyid: d for d in keyring.revoked}
    for gone in previous.revoked:
        if gone.keyid not in listed:
            raise Revoked(f"keyring: {where} drops the revocation of key {short_id(gone.keyid)} "
                          f"(revoked in version {gone.version}: {gone.reason}); a revoked key "
                          "is never trusted again")
        if gone.voids_past and not listed[gone.keyid].voids_past:
            raise Revoked(f"keyring: {where} narrows the revocation of compromised key "
                          f"{short_id(gone.keyid)} to later records; what a compromised key signed "
                          "is never trusted again")
    back = [k.keyid for k in keyring.keys if k.keyid in listed]
    if back:
        raise Revoked(f"keyring: {where} trusts key {short_id(back[0])}, which it lists as revoked")


def _parse(data: bytes, version: int) -> Keyring:
    where = file_name(version)
    try:
        envelope = dsse.parse_envelope(data)
        if envelope.payloadType != PAYLOAD_TYPE:
            raise Malformed(f"payload type {envelope.payloadType!r}")
        payload = envelope.payload_bytes()
        document = loads_json(payload)
        refuse_newer(document, "_type", "registry.keyring/", 1, where)
        keyring = Keyring.model_validate(document, extra=WIRE)
        _ = [k.keyid for k in keyring.keys]  # every key must load
        _ = [d.keyid for d in (*keyring.retired, *keyring.revoked)]
    except NewerFormat:
        raise
    except (RegistryError, ValueError, ValidationError) as e:  # a bad PEM is a RegistryError
        raise Malformed(f"keyring: {where} is not a keyring ({_first(e)})") from None
    if canonical_bytes(document) != payload:  # the document's, extra fields included
        raise Malformed(f"keyring: {where} is not in canonical form")
    if keyring.version != version:
        raise Malformed(f"keyring: {where} says it is version {keyring.version}")
    return keyring


def _check_signed(data: bytes, keyring: Keyring, previous: Keyring | None, pin: Pin) -> None:
    where = file_name(keyring.version)
    if previous is None:  # the first version this home sees: the pinned roots sign it
        pinned = {k: v for k, v in keyring.roots.items() if k in pin.roots}
        needed = [(pinned, pin.threshold, "the pinned roots")]
    else:
        needed = [(previous.roots, previous.threshold, f"the roots of version {previous.version}")]
    needed.append((keyring.roots, keyring.threshold, "its own roots"))
    for keys, threshold, whose in needed:
        valid = sum(_valid(key, data) for key in keys.values())
        if valid < threshold:
            raise ThresholdNotMet(f"keyring: {where} is signed by {valid} of {whose}, "
                                     f"needs {threshold}")


def _valid(key: Ed25519PublicKey, data: bytes) -> bool:
    """Does any signature in the envelope verify under `key`? (A signature's claimed
    key id is not read: the key decides, and one key counts once.)"""
    envelope = dsse.parse_envelope(data)
    message = dsse.pae(envelope.payloadType, envelope.payload_bytes())
    for s in envelope.signatures:
        try:
            key.verify(dsse.decode_sig(s.sig), message)
            return True
        except InvalidSignature:
            continue
    return False


def _first(e: Exception) -> str:
    return str(e).splitlines()[0]
