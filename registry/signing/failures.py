"""The ways a trust check fails, one type each, so callers and tests tell them apart by
type rather than by message text (python-tuf's `tuf/api/exceptions.py` is the model).

Each is a subclass of the `RegistryError` kind whose exit code it has always had
(docs/cli.md): a check that ran and found something wrong is a `VerificationFailed`
(exit 1); a document from a newer registry, which this one cannot judge, is
`Unverifiable` (exit 3); a keyring change this home cannot make is `Refused` (exit 6).
`Kind` names each type in models (a history problem, a refused pull's report).
`NewerFormat` lives in registry.errors (the formats below this layer raise it too).
"""

from enum import StrEnum
from typing import ClassVar

from registry.errors import NewerFormat, Refused, RegistryError, VerificationFailed


class Kind(StrEnum):
    rolled_back = "rolled-back"
    threshold_not_met = "threshold-not-met"
    unknown_key = "unknown-key"
    bad_signature = "bad-signature"
    revoked = "revoked"
    unsigned = "unsigned"
    not_linear = "not-linear"
    not_append_only = "not-append-only"
    malformed = "malformed"
    missing = "missing"
    unrelated = "unrelated"
    newer_format = "newer-format"
    keyring_conflict = "keyring-conflict"


class TrustFailure(VerificationFailed):
    """A trust check ran and found something wrong (exit 1)."""

    kind: ClassVar[Kind] = Kind.malformed


class RolledBack(TrustFailure):
    """Something this home verified is gone: an older keyring version than the pinned
    one, or a history (local or a remote's) that does not descend from the head this
    home last verified."""

    kind = Kind.rolled_back


class ThresholdNotMet(TrustFailure):
    """A keyring version signed by fewer root keys than its threshold asks for."""

    kind = Kind.threshold_not_met


class UnknownKey(TrustFailure):
    """Signed by a key the keyring in effect does not trust."""

    kind = Kind.unknown_key


class BadSignature(TrustFailure):
    """A signature by a known key that does not verify over these bytes."""

    kind = Kind.bad_signature


class Revoked(TrustFailure):
    """Signed by a revoked key, or a keyring version that trusts a revoked key again."""

    kind = Kind.revoked


class Unsigned(TrustFailure):
    """A ledger commit that carries no registry signature (or is not one of ours)."""

    kind = Kind.unsigned


class NotLinear(TrustFailure):
    """A merge commit: a ledger's history is a line."""

    kind = Kind.not_linear


class NotAppendOnly(TrustFailure):
    """A record or keyring version changed or deleted, or a file that is no ledger
    file."""

    kind = Kind.not_append_only


class Malformed(TrustFailure):
    """Bytes that are not what they claim to be: not a keyring, not a record, not
    canonical, not readable."""

    kind = Kind.malformed


class MissingVersion(TrustFailure):
    """A keyring version missing from the chain, or no keyring at all."""

    kind = Kind.missing


class Unrelated(TrustFailure):
    """Two ledgers that share no history: a home that started a keyring of its own."""

    kind = Kind.unrelated


class KeyringConflict(Refused):
    """A keyring change that cannot be made on top of the other side's."""

    kind: ClassVar[Kind] = Kind.keyring_conflict


__all__ = ["NewerFormat"]  # re-exported: one place to import every failure kind from
Failure = TrustFailure | NewerFormat | KeyringConflict
CLASSES: dict[Kind, type[Failure]] = {
    Kind(cls.kind): cls for cls in (RolledBack, ThresholdNotMet, UnknownKey, BadSignature, Revoked,
                              Unsigned, NotLinear, NotAppendOnly, Malformed, MissingVersion,
                              Unrelated, NewerFormat, KeyringConflict)}


def failure(kind: Kind, message: str) -> Failure:
    """The typed failure of `kind`."""
    return CLASSES[kind](message)


def kind_of(error: RegistryError) -> Kind:
    """The kind of a failure; an untyped error counts as malformed input."""
    return Kind(getattr(error, "kind", Kind.malformed))
