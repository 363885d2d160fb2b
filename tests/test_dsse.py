"""DSSE envelopes: the PAE and canonical bytes pinned by fixed vectors, signatures
checked by us and by an independent implementation (securesystemslib)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.base.canonical import canonical_bytes
from registry.errors import Unverifiable, VerificationFailed
from registry.signing import dsse
from registry.signing.keys import key_id, public_pem

# A fixed key (seed 00 01 .. 1f) and payload: Ed25519 is deterministic, so the whole
# envelope is a fixed vector.
SEED = bytes(range(32))
PAYLOAD = b'{"_type":"https://in-toto.io/Statement/v1"}'
KEYID = "56475aa75463474c0285df5dbf2bcab73da651358839e9b77481b2eab107708c"
ENVELOPE = (
    b'{"payload":"eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEifQ==",'
    b'"payloadType":"application/vnd.in-toto+json","signatures":[{"keyid":"' + KEYID.encode()
    + b'","sig":"Fo6jOXP9gw1yxFFqcxT3OROGg9MHJ9G2Ps2yCG4lrdJS8Yli9xdH78rzsGRdX7vN0BvZnteNGPg9F79'
    b'CG51UDQ=="}]}'
)


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(SEED)


def test_pae_matches_the_dsse_spec_vector() -> None:
    # from the DSSE protocol document
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world")
    assert dsse.pae("t", b"") == b"DSSEv1 1 t 0 "


def test_pae_counts_bytes_not_characters() -> None:
    assert dsse.pae("ü", "é".encode()) == "DSSEv1 2 ü 2 é".encode()


def test_canonical_bytes_vector() -> None:
    value = {"b": 1, "a": [1.5, "é", None], "c": 1e21, "d": {"z": True, "y": 0.1}}
    expected = b'{"a":[1.5,"\xc3\xa9",null],"b":1,"c":1e+21,"d":{"y":0.1,"z":true}}'
    assert canonical_bytes(value) == expected


def test_key_id_is_sha256_of_the_raw_public_key(key) -> None:
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert key_id(key.public_key()) == hashlib.sha256(raw).hexdigest() == KEYID


def test_envelope_vector(key) -> None:
    envelope = dsse.sign(PAYLOAD, KEYID, key)
    assert dsse.envelope_bytes(envelope) == ENVELOPE
    assert envelope.payload_bytes() == PAYLOAD


def test_sign_then_verify(key) -> None:
    envelope = dsse.parse_envelope(ENVELOPE)
    assert dsse.verify(envelope, {KEYID: key.public_key()}) == KEYID


def test_a_changed_payload_fails_the_signature(key) -> None:
    envelope = dsse.parse_envelope(ENVELOPE)
    forged = envelope.model_copy(update={"payload": base64.b64encode(PAYLOAD + b" ").decode()})
    with pytest.raises(VerificationFailed, match="signature: invalid"):
        dsse.verify(forged, {KEYID: key.public_key()})


def test_an_unknown_key_cannot_verify(key) -> None:
    other = Ed25519PrivateKey.generate().public_key()
    with pytest.raises(Unverifiable, match="unknown key 56475aa75463"):
        dsse.verify(dsse.parse_envelope(ENVELOPE), {key_id(other): other})


def test_same_key_id_with_another_key_is_an_invalid_signature() -> None:
    impostor = Ed25519PrivateKey.generate().public_key()
    with pytest.raises(VerificationFailed, match="signature: invalid"):
        dsse.verify(dsse.parse_envelope(ENVELOPE), {KEYID: impostor})


@pytest.mark.parametrize("data, problem", [
    (json.dumps(json.loads(ENVELOPE), indent=2).encode(), "not the canonical form"),
    (ENVELOPE.replace(b'"payloadType"', b'"payloadtype"'), "not a DSSE envelope"),
    (ENVELOPE.replace(b"fQ==", b"fR=="), "base64 is not in canonical form"),  # same bytes decoded
    (ENVELOPE.replace(b"eyJf", b"e!Jf"), "payload is not valid base64"),
    (b"\xff" + ENVELOPE, "not a DSSE envelope"),
    (b'{"payload":"","payloadType":"x","signatures":[]}', "not a DSSE envelope"),
])
def test_malformed_envelopes_are_rejected(data, problem) -> None:
    with pytest.raises(VerificationFailed, match=problem):
        dsse.parse_envelope(data)


def test_securesystemslib_verifies_our_envelope_given_only_the_public_key(key) -> None:
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    pem = public_pem(key.public_key()).encode()  # all the verifier gets
    public = SSlibKey.from_crypto(serialization.load_pem_public_key(pem), keyid=KEYID)
    theirs = Envelope.from_dict(json.loads(dsse.envelope_bytes(dsse.sign(PAYLOAD, KEYID, key))))
    assert theirs.payload == PAYLOAD and theirs.payload_type == dsse.PAYLOAD_TYPE
    assert KEYID in theirs.verify([public], 1)
    theirs.payload = PAYLOAD + b" "
    with pytest.raises(VerificationError):
        theirs.verify([public], 1)


def test_a_public_pem_reads_the_same_with_or_without_the_general_parser() -> None:
    """registry/signing/keys.py reads the PEM `public_pem` writes without cryptography's
    serialization package; every other text goes to that parser, with its errors."""
    import base64

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from registry.errors import InvalidInput
    from registry.signing.keys import _raw_ed25519, load_public_pem

    public = Ed25519PrivateKey.generate().public_key()
    pem = public_pem(public).encode()
    assert _raw_ed25519(pem) == public.public_bytes_raw()
    assert load_public_pem(pem, "k").public_bytes_raw() == public.public_bytes_raw()
    body = pem.split(b"\n")[1]
    wrapped = b"-----BEGIN PUBLIC KEY-----\n" + body[:30] + b"\n" + body[30:] + \
        b"\n-----END PUBLIC KEY-----\n"  # valid PEM, another layout: the general parser
    assert _raw_ed25519(wrapped) is None
    assert load_public_pem(wrapped, "k").public_bytes_raw() == public.public_bytes_raw()
    der = base64.b64decode(body)
    for bad in (der[:-1], b"\x31" + der[1:], der + b"\x00"):  # short, another type, long
        text = b"-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(bad) + \
            b"\n-----END PUBLIC KEY-----\n"
        assert _raw_ed25519(text) is None
        with pytest.raises(InvalidInput):
            load_public_pem(text, "k")
    assert _raw_ed25519(pem.replace(body, body[:-4] + b"!!!!")) is None
