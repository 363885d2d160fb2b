"""`registry verify`: is the ledger what trusted keys wrote, and each record exactly
what was sealed?

The ledger as a whole: its keyring verifies from this home's pin
(registry/store/trust.py); its history is signed, linear, append-only and descends from
the head this home last verified (registry/store/history.py). Each record: the
statement's sha256 is its id; the envelope signs it under a key that was a signer in
the keyring in effect when the record was added, and is not revoked since; every
artifact's object still hashes to its subject digest; the ledger files equal their
commit; the index row says what the statement says. Problems name the part; each is
`wrong` or `unverifiable` (could not verify: missing object, unknown key); the CLI
maps them to exit codes 1 and 3.

A clean history moves the home's remembered head forward, so a later rewrite or
deletion is reported as exactly that.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import Field

from registry.base.model import Frozen
from registry.base.parallel import map_parts
from registry.errors import Failure, RegistryError, Unverifiable
from registry.formats.display import short_id
from registry.formats.record import Statement, Subject, match_id, parse_statement
from registry.signing.keyring import Chain, Role
from registry.signing.signed import Trust, check_signed
from registry.store.history import History, check_history
from registry.store.home import Home
from registry.store.ledger import ENVELOPE, STATEMENT, Committed, Ledger, blob_sha
from registry.store.objects import ObjectState, ObjectStore
from registry.store.rows import Rows, entry_differences, entry_rows


class Problem(Frozen):
    part: str  # statement | envelope | signature | artifact <name> | ledger | index | keyring
    detail: str
    failure: Failure


class RecordCheck(Frozen):
    id: str
    verified: bool
    signer: str | None  # only when the signature verifies under a trusted key
    artifacts: int
    problems: list[Problem]
    note: str | None = None  # verified, signed by a key revoked since (registry.signing.signed)


class VerifyReport(Frozen):
    head: str | None
    keyring_version: int | None
    ledger: list[Problem]  # the keyring and the history as a whole
    records: list[RecordCheck]
    verifications: int = 0  # attestations a trusted key signed, judging committed records
    attestation_problems: list[Problem] = Field(default_factory=list)  # those that do not count

    @property
    def worst(self) -> Failure | None:
        """`wrong` if anything is wrong, else `unverifiable` if anything could not be
        checked, else None (everything verified)."""
        found = {p.failure for p in (*self.ledger, *self.attestation_problems,
                                     *(p for c in self.records for p in c.problems))}
        return next((f for f in (Failure.wrong, Failure.unverifiable) if f in found), None)


@dataclass
class _Context:
    """Everything read once, for any number of records."""

    ledger: Ledger
    chain: Chain
    history: History
    tree: dict[str, Committed]
    blobs: dict[str, bytes]
    index: dict[str, Rows] | None  # None when the index cannot be read
    objects: ObjectStore
    states: dict[str, ObjectState] = field(default_factory=dict)

    def state(self, digest: str) -> ObjectState:
        if digest not in self.states:
            self.states[digest] = self.objects.state(digest)
        return self.states[digest]


def verify_records(home: Home, prefix: str | None = None) -> VerifyReport:
    """Verify the ledger and one record (by id or unambiguous prefix) or, with None,
    every record."""
    from registry.signing.keyring import verify_chain
    from registry.store.journal import pending
    from registry.store.transaction import transaction
    from registry.store.trust import keyring_files, load_state, remember

    if pending(Ledger(home.ledger)) is not None:  # a pull was killed half way: finish it
        with transaction(home):
            pass

    ledger = Ledger(home.ledger)
    state = load_state(home)
    try:
        chain = verify_chain(keyring_files(ledger), state.pin)
    except RegistryError as e:
        problem = Problem(part="keyring", detail=e.message.partition(": ")[2] or e.message,
                          failure=Failure.unverifiable if isinstance(e, Unverifiable)
                          else Failure.wrong)
        return VerifyReport(head=ledger.head(), keyring_version=None, ledger=[problem],
                            records=[])
    with ThreadPoolExecutor(max_workers=1) as pool:
        # the history is mostly git's work (a diff of every commit): read the rest meanwhile
        walked = pool.submit(check_history, ledger, chain, state.head)
        tree = ledger.records()
        ids = sorted(rid for rid, entry in tree.items() if STATEMENT in entry.blobs)
        wanted = [match_id(prefix, ids)] if prefix else ids
        blobs = ledger.blobs([sha for rid in wanted for name in (STATEMENT, ENVELOPE)
                              if (sha := tree[rid].blobs.get(name))])
        index = _index_entries(home)
        history = walked.result()
    ledger_problems = [_failed("ledger", p.detail) for p in history.problems]
    ctx = _Context(ledger=ledger, chain=chain, history=history, tree=tree, blobs=blobs,
                   index=index, objects=ObjectStore(home.objects))
    # CPU-bound Python (a signature, a statement, the artifacts' hashes): one forked
    # process per CPU when there are many, the same checks in the same order either way
    checks = map_parts(lambda part: [_check(ctx, wanted[i]) for i in part], len(wanted))
    if prefix is None and ctx.index is not None:
        checks += [_absent(rid) for rid in sorted(set(ctx.index) - set(ids))]
    remember(home, state, chain, head=None if history.problems else history.head)
    good, bad = _attestations(home)
    return VerifyReport(head=history.head, keyring_version=max(chain.versions),
                        ledger=ledger_problems, records=checks, verifications=good,
                        attestation_problems=bad)


def _attestations(home: Home) -> tuple[int, list[Problem]]:
    """How many verification attestations count, and a problem for each that does not."""
    from registry.store.verifications import all_verifications

    good, bad = all_verifications(home)
    return len(good), [Problem(part=f"verification {short_id(b.id)}", detail=b.detail,
                               failure=b.failure) for b in bad]


def _index_entries(home: Home) -> dict[str, Rows] | None:
    from registry.store.query import readable_index

    try:
        return readable_index(home).entries()
    except RegistryError:
        return None


def _absent(rid: str) -> RecordCheck:
    gone = _failed("index", "in the index but not in the ledger (deleted?)")
    return RecordCheck(id=rid, verified=False, signer=None, artifacts=0, problems=[gone])


def _check(ctx: _Context, rid: str) -> RecordCheck:
    problems: list[Problem] = []
    files = {name: _ledger_file(ctx, rid, name, problems) for name in (STATEMENT, ENVELOPE)}
    statement = files[STATEMENT]
    signer, note = _check_signature(ctx, rid, statement, files[ENVELOPE], problems)
    subjects: list[Subject] = []
    if signer is not None and statement is not None:
        try:  # parsed once, within safeload's limits: a signed statement is input too
            parsed = parse_statement(statement)
        except RegistryError as e:
            problems.append(_failed("statement", e.message))
        else:
            subjects = parsed.subject
            problems += _check_artifacts(ctx, subjects)
            problems += _check_index(ctx, rid, parsed, signer)
    return RecordCheck(id=rid, verified=not problems, signer=signer, artifacts=len(subjects),
                       problems=problems, note=note)


def _check_signature(ctx: _Context, rid: str, statement: bytes | None, envelope: bytes | None,
                     problems: list[Problem]) -> tuple[str | None, str | None]:
    """(the signer, a note), when the envelope signs this statement under a key that
    could sign records when it was added and is not revoked since as compromised (the
    note names a revocation from a later version)."""
    version = ctx.history.keyring_at.get(rid)
    ring = ctx.chain.versions.get(version or 0)
    keys = ring.with_role(Role.signer) if ring else {}
    check = check_signed(statement, envelope, expected_id=rid, keyring=ctx.chain.current,
                         keys=keys)
    if not check.ok:
        problems.append(Problem(part=check.part, detail=check.detail or check.trust.value,
                                failure=Failure.unverifiable if check.trust is Trust.untrusted
                                else Failure.wrong))
    return check.signer, check.note


def _ledger_file(ctx: _Context, rid: str, name: str, problems: list[Problem]) -> bytes | None:
    """The committed bytes; the working-tree copy readers open must equal them."""
    part = name.removesuffix(".json")
    entry = ctx.tree.get(rid)
    committed = entry.blobs.get(name) if entry else None
    if entry is None or committed is None:
        problems.append(_failed(part, f"{name} was never committed to the ledger"))
        return None
    try:
        raw = (ctx.ledger.path / entry.folder / name).read_bytes()
    except OSError:
        problems.append(_failed(part, f"{name} is missing from the ledger folder"))
    else:
        if blob_sha(raw) != committed:
            problems.append(_failed(part, f"{name} differs from its ledger commit"))
    return ctx.blobs.get(committed)


def _check_artifacts(ctx: _Context, subjects: list[Subject]) -> list[Problem]:
    out = []
    for subject in subjects:
        state = ctx.state(subject.sha256)
        if state is ObjectState.missing:
            out.append(_unverifiable(f"artifact {subject.name}",
                                     f"object {short_id(subject.sha256)} is missing from the "
                                     "store"))
        elif state is ObjectState.corrupt:
            out.append(_failed(f"artifact {subject.name}",
                               f"stored bytes no longer hash to {short_id(subject.sha256)}"))
    return out


def _check_index(ctx: _Context, rid: str, statement: Statement, signer: str) -> list[Problem]:
    """The index is a cache: its row must say what the signed statement says."""
    if ctx.index is None:
        return [_unverifiable("index", "the index cannot be read (registry reindex)")]
    signed = entry_rows(rid, statement, signer)
    indexed = ctx.index.get(rid)
    if indexed is None:
        return [_unverifiable("index", "record not in the index (registry reindex)")]
    differs = entry_differences(indexed, signed)
    commit = indexed["records"][0].get("ledger_commit")
    if commit != ctx.history.added.get(rid):
        differs.append("records.ledger_commit")
    if differs:
        return [_failed("index", f"the index row differs from the signed statement in "
                                 f"{', '.join(differs)} (registry reindex)")]
    return []


def _failed(part: str, detail: str) -> Problem:
    return Problem(part=part, detail=detail, failure=Failure.wrong)


def _unverifiable(part: str, detail: str) -> Problem:
    return Problem(part=part, detail=detail, failure=Failure.unverifiable)
