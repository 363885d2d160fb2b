"""DSSE envelopes (https://github.com/secure-systems-lab/dsse, protocol v1).

The signature covers PAE(payloadType, payload) =
`DSSEv1 <len(type)> <type> <len(payload)> <payload>` over the exact payload bytes;
nothing is re-serialized before verifying. An envelope file is the RFC 8785 canonical
JSON of the envelope, so a byte that changes without changing its meaning (another
JSON escape, base64 padding bits) is still caught: the bytes must be canonical.
"""

import base64
import binascii

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import Field, ValidationError

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.errors import Unverifiable, VerificationFailed
from registry.formats.display import short_id

PAYLOAD_TYPE = "application/vnd.in-toto+json"


class Signature(Frozen):
    keyid: str
    sig: str = Field(description="base64 Ed25519 signature over the PAE")


class Envelope(Frozen):
    payload: str = Field(description="base64 of the exact signed bytes")
    payloadType: str  # the DSSE wire name
    signatures: list[Signature] = Field(min_length=1)

    def payload_bytes(self) -> bytes:
        return _b64(self.payload, "payload")


def pae(payload_type: str, payload: bytes) -> bytes:
    kind = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def sign(payload: bytes, keyid: str, key: Ed25519PrivateKey,
         payload_type: str = PAYLOAD_TYPE) -> Envelope:
    sig = key.sign(pae(payload_type, payload))
    return Envelope(payload=base64.b64encode(payload).decode(), payloadType=payload_type,
                    signatures=[Signature(keyid=keyid, sig=base64.b64encode(sig).decode())])


def envelope_bytes(envelope: Envelope) -> bytes:
    return canonical_bytes(envelope)


def parse_envelope(data: bytes) -> Envelope:
    """The envelope in `data`, which must be exactly its canonical bytes."""
    try:
        envelope = Envelope.model_validate(loads_json(data))
    except (ValueError, ValidationError) as e:  # JSONDecodeError and UnicodeDecodeError too
        raise VerificationFailed(f"envelope: not a DSSE envelope ({_first_line(e)})") from None
    if envelope_bytes(envelope) != data:
        raise VerificationFailed("envelope: bytes are not the canonical form of its content")
    fields = [("payload", envelope.payload), *(("signature", s.sig) for s in envelope.signatures)]
    for what, text in fields:
        if base64.b64encode(_b64(text, what)).decode() != text:
            raise VerificationFailed("envelope: base64 is not in canonical form")
    return envelope


def verify(envelope: Envelope, trusted: dict[str, Ed25519PublicKey]) -> str:
    """The id of the trusted key whose signature is valid; raises otherwise.

    Bad signature by a trusted key: VerificationFailed. No trusted key: Unverifiable.
    """
    message = pae(envelope.payloadType, envelope.payload_bytes())
    known = [s for s in envelope.signatures if s.keyid in trusted]
    if not known:
        ids = ", ".join(short_id(s.keyid) for s in envelope.signatures)
        raise Unverifiable(f"signature: signed by unknown key {ids}",
                           hint="trust the signer's public key: registry keys trust KEY.pub")
    for s in known:
        try:
            trusted[s.keyid].verify(_b64(s.sig, "signature"), message)
            return s.keyid
        except InvalidSignature:
            continue
    raise VerificationFailed(f"signature: invalid for key {short_id(known[0].keyid)}")


def decode_sig(text: str) -> bytes:
    return _b64(text, "signature")


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationFailed(f"envelope: {what} is not valid base64") from None


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0]
