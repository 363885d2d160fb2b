"""The verify-then-apply core of a pull: from the bytes a remote sent (keyring
versions, commits, record files) and this home's root of trust, to fully parsed and
validated statements, before any ref moves.

Pure: no git, no files, no home (python-tuf's `TrustedMetadataSet` is the model: it
takes bytes, and what it returns is trusted or it raises). `verify_incoming` checks, in
order, the keyring chain from the pin, the history (signed, linear, append-only, a
descendant of the remote head this home last verified), and every record it adds:
signed by a key that could sign records when it was added, hashing to its id, and
parsing as a statement. Anything wrong raises `PullRefused` with every failure, each a
typed kind (registry.signing.failures); a `Trusted` is what may be applied, whole.

One exception: a commit or record signed by a key that was trusted then and is
revoked now does not refuse the pull (history is only appended to, so a revocation
could otherwise never be published); its records come back as `untrusted`.
"""

from __future__ import annotations

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import RegistryError, VerificationFailed
from registry.formats.display import short_id
from registry.formats.record import Statement, parse_statement
from registry.signing.failures import Failure, Kind, Malformed, Revoked, failure, kind_of
from registry.signing.keyring import Chain, Pin, Role, verify_chain
from registry.signing.signed import check_signed
from registry.store.history import Commits, History, walk

RecordBytes = tuple[bytes | None, bytes | None]  # (statement, envelope)
SHOWN = 20


class TrustedRecord(Frozen):
    """A record a pull may apply: its statement parsed, its signer verified."""

    id: str
    statement: Statement
    signer: str
    commit: str = Field(description="the ledger commit that added it")

    @property
    def digests(self) -> list[str]:
        return [s.sha256 for s in self.statement.subject]


class Trusted(Frozen):
    """What a pull may apply: a verified head, its keyring chain and history, and the
    parsed records it brings."""

    head: str
    chain: Chain
    history: History
    records: dict[str, TrustedRecord]
    untrusted: dict[str, str] = Field(default_factory=dict, description=(
        "records in the history signed by a key revoked since: kept (history is only "
        "appended to), never indexed or shown as trusted"))


class PullRefused(VerificationFailed):
    """The remote's ledger does not verify: nothing of it was applied. `failures` holds
    each problem as its typed kind."""

    def __init__(self, remote: str, failures: list[Failure]) -> None:
        shown = "\n  ".join(f.message for f in failures[:SHOWN])
        more = f"\n  (and {len(failures) - SHOWN} more)" if len(failures) > SHOWN else ""
        newer = any(kind_of(f) is Kind.newer_format for f in failures)
        super().__init__(f"refused: remote {remote!r} does not verify; nothing was applied:\n"
                         f"  {shown}{more}",
                         hint="upgrade registry: a member pushed with a newer version; your "
                              "ledger is unchanged" if newer else
                              "the remote was rewritten or tampered with: tell its owner; "
                              "your ledger is unchanged")
        self.failures = failures
        self.problems = [f.message for f in failures]

    @property
    def kinds(self) -> set[Kind]:
        return {kind_of(f) for f in self.failures}


def verify_incoming(remote: str, pin: Pin, last_verified: str | None,
                    keyring: dict[int, bytes], commits: Commits,
                    files: dict[str, RecordBytes]) -> Trusted:
    """The trusted view of a remote's head, or PullRefused; `files` holds the bytes
    of every record to apply."""
    if commits.head is None:
        raise PullRefused(remote, [Malformed("the remote has no history")])
    chain = verify_keyring(remote, keyring, pin)
    history = walk(commits, chain, last_verified)
    fatal = [p.failure() for p in history.problems if p.kind is not Kind.revoked]
    if fatal:
        raise PullRefused(remote, fatal)
    records, untrusted, failures = {}, {}, []
    for rid, (statement, envelope) in sorted(files.items()):
        try:
            records[rid] = trusted_record(chain, history, rid, statement, envelope)
        except Revoked as e:  # signed while its key was trusted; revoked since
            untrusted[rid] = e.message
        except RegistryError as e:
            failures.append(_typed(e, f"record {short_id(rid)}: "))
    if failures:
        raise PullRefused(remote, failures)
    return Trusted(head=commits.head, chain=chain, history=history, records=records,
                   untrusted=untrusted)


def verify_keyring(remote: str, keyring: dict[int, bytes], pin: Pin) -> Chain:
    try:
        return verify_chain(keyring, pin)
    except RegistryError as e:
        raise PullRefused(remote, [_typed(e)]) from None


def trusted_record(chain: Chain, history: History, rid: str, statement: bytes | None,
                   envelope: bytes | None) -> TrustedRecord:
    """One record checked and parsed, or a typed failure."""
    if rid not in history.added:
        raise Malformed(f"record {short_id(rid)} is in the tree but no commit added it")
    ring = chain.versions.get(history.keyring_at.get(rid) or 0)
    check = check_signed(statement, envelope, expected_id=rid, keyring=chain.current,
                         keys=ring.with_role(Role.signer) if ring else {})
    if not check.ok or statement is None or check.signer is None:
        raise failure(check.kind or Kind.malformed, check.detail or check.trust.value)
    return TrustedRecord(id=rid, statement=parse_statement(statement), signer=check.signer,
                         commit=history.added[rid])


def _typed(error: RegistryError, prefix: str = "") -> Failure:
    """`error` as its typed failure, its message prefixed."""
    made = failure(kind_of(error), f"{prefix}{error.message}")
    made.hint = error.hint
    return made
