"""Is this what a trusted key signed? The check every reader makes before it shows a
record, a teacher binding or anything else from the ledger.

A record is `verified` when its statement hashes to its id and its DSSE envelope
carries that statement with a signature valid under a key the verified keyring lets
sign records (an active signer, or a retired one: the signed history proves when its
records were added). A key revoked from a version on counts for what it signed while
it was a signer (`keys` says which keys were, where the caller knows when the record was
added), with a `note` saying it was revoked since. A key revoked as compromised, an
unknown key, a bad signature or a statement that is not the record's: anything else is
shown, if at all, under that mark and never under the signer the envelope claims.
"""

from enum import StrEnum

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from registry.base.canonical import sha256_hex
from registry.base.model import Frozen
from registry.errors import RegistryError, Unverifiable, VerificationFailed
from registry.formats.display import short_id
from registry.signing import dsse
from registry.signing.failures import Kind
from registry.signing.keyring import Keyring


class Trust(StrEnum):
    verified = "verified"
    untrusted = "untrusted"  # signed, but not by a key this home trusts
    invalid = "invalid"  # bytes or signature wrong: changed after signing


class SignatureCheck(Frozen):
    trust: Trust
    signer: str | None = None  # only when verified
    detail: str | None = None
    part: str = "signature"  # or "statement": which file is wrong
    kind: Kind | None = None  # why it is not verified (registry.signing.failures)
    note: str | None = None  # verified, by a key revoked since (from a later version)

    @property
    def ok(self) -> bool:
        return self.trust is Trust.verified

    def error(self, what: str) -> RegistryError:
        """The refusal a judging command raises for a record that is not verified."""
        kind = Unverifiable if self.trust is Trust.untrusted else VerificationFailed
        return kind(f"{what} is {self.trust.value}: {self.detail}",
                    hint="registry verify names what is wrong; only verified records are judged")


def check_signed(payload: bytes | None, envelope: bytes | None, *, expected_id: str | None,
                 keyring: Keyring, payload_type: str = dsse.PAYLOAD_TYPE,
                 keys: dict[str, Ed25519PublicKey] | None = None) -> SignatureCheck:
    """Check `envelope` signs `payload` (whose sha256 must be `expected_id` when given)
    under `keys` (default: the keyring's record keys), refusing revoked keys."""
    if payload is None or envelope is None:
        return _invalid("the statement or its envelope is missing")
    if expected_id is not None and sha256_hex(payload) != expected_id:
        return _invalid("its statement no longer hashes to its id", part="statement")
    try:
        parsed = dsse.parse_envelope(envelope)
        signed = parsed.payload_bytes()
    except RegistryError as e:
        return _invalid(e.message)
    if signed != payload or parsed.payloadType != payload_type:
        return _invalid("the envelope signs other bytes than the statement")
    message = dsse.pae(parsed.payloadType, signed)
    allowed = keyring.record_keys() if keys is None else keys
    candidates = {**allowed, **{d.keyid: _key(d.public) for d in keyring.revoked}}
    claimed = {s.keyid for s in parsed.signatures}
    for keyid, key in sorted(candidates.items(), key=lambda kv: kv[0] not in claimed):
        if any(_verifies(key, s.sig, message) for s in parsed.signatures):
            if (revoked := keyring.revocation(keyid)) is None:
                return SignatureCheck(trust=Trust.verified, signer=keyid)
            if revoked.voids_past or keyid not in allowed:
                return SignatureCheck(trust=Trust.untrusted, kind=Kind.revoked,
                                      detail=f"signed by revoked key {short_id(keyid)} "
                                             f"({revoked.reason})")
            return SignatureCheck(trust=Trust.verified, signer=keyid, note=(
                f"signed by key {short_id(keyid)} before its revocation in keyring version "
                f"{revoked.version} ({revoked.reason})"))
    names = ", ".join(sorted(short_id(k) for k in claimed))
    return SignatureCheck(trust=Trust.untrusted, kind=Kind.unknown_key,
                          detail=f"no signature by a key this home trusts (claims {names})")


def _verifies(key: Ed25519PublicKey, sig: str, message: bytes) -> bool:
    try:
        key.verify(dsse.decode_sig(sig), message)
        return True
    except (InvalidSignature, VerificationFailed):
        return False


def _key(pem: str) -> Ed25519PublicKey:
    from registry.signing.keys import load_public_pem

    return load_public_pem(pem.encode(), "keyring entry")


def _invalid(detail: str, part: str = "signature") -> SignatureCheck:
    return SignatureCheck(trust=Trust.invalid, detail=detail, part=part, kind=Kind.malformed)
