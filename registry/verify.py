"""`registry verify`: is a record exactly what was sealed?

For each record: the statement's sha256 is its id; the envelope is canonical, its
payload is that statement and its signature is valid under a key the ledger trusts;
every artifact's object still hashes to its subject digest; the ledger files equal
their commit, were added once and never changed, by the commit the index recorded at
sealing (a rewritten history loses that commit). Problems name the part; each is
"wrong" (exit 1) or "could not verify" (exit 3: missing object, unknown key).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from registry.errors import ExitCode, RegistryError, VerificationFailed
from registry.record import Subject, match_id, record_id
from registry.safeload import loads_json
from registry.store import dsse, keys
from registry.store.home import Home
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT, Event, Ledger, blob_sha
from registry.store.objects import ObjectState, ObjectStore


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Problem(Model):
    part: str  # statement | envelope | signature | artifact <name> | ledger | index
    detail: str
    exit_code: int


class RecordCheck(Model):
    id: str
    verified: bool
    signer: str | None
    artifacts: int
    problems: list[Problem]


class VerifyReport(Model):
    records: list[RecordCheck]
    exit_code: int


@dataclass
class _Ledger:
    """Everything read from git once, for any number of records."""

    ledger: Ledger
    tree: dict[str, str]
    trusted: dict[str, Any]
    history: dict[str, list[Event]]
    commits: set[str]
    sealed_by: dict[str, str]  # index: record id -> ledger commit recorded at sealing
    objects: ObjectStore
    states: dict[str, ObjectState] = field(default_factory=dict)

    def state(self, digest: str) -> ObjectState:
        if digest not in self.states:
            self.states[digest] = self.objects.state(digest)
        return self.states[digest]


def verify_records(home: Home, prefix: str | None = None) -> VerifyReport:
    """Verify one record (by id or unambiguous prefix) or, with None, all of them."""
    from registry.store.query import readable_index

    ledger = Ledger(home.ledger)
    try:
        sealed_by = readable_index(home).commits()
    except RegistryError:
        sealed_by = {}
    ids = ledger.record_ids()
    wanted = [match_id(prefix, ids)] if prefix else ids
    ctx = _Ledger(
        ledger=ledger, tree=ledger.tree_files(RECORDS),
        trusted=keys.trusted(home),
        history=ledger.history(prefix and wanted[0]), commits=ledger.commits(),
        sealed_by=sealed_by, objects=ObjectStore(home.objects),
    )
    checks = [_check(ctx, rid) for rid in wanted]
    if prefix is None:
        checks += [_absent(rid) for rid in sorted(set(sealed_by) - set(ids))]
    return VerifyReport(records=checks, exit_code=_worst(p for c in checks for p in c.problems))


def _worst(problems: Iterable[Problem]) -> int:
    codes = {p.exit_code for p in problems}
    for code in (ExitCode.FAILED, ExitCode.UNVERIFIABLE):
        if code in codes:
            return int(code)
    return int(ExitCode.OK)


def _absent(rid: str) -> RecordCheck:
    gone = Problem(part="ledger", detail="in the index but not in the ledger (deleted?)",
                   exit_code=ExitCode.FAILED)
    return RecordCheck(id=rid, verified=False, signer=None, artifacts=0, problems=[gone])


def _check(ctx: _Ledger, rid: str) -> RecordCheck:
    problems: list[Problem] = []
    files = {name: _ledger_file(ctx, rid, name, problems) for name in (STATEMENT, ENVELOPE)}
    statement_raw = files[STATEMENT]
    if statement_raw is not None and record_id(statement_raw) != rid:
        digest = record_id(statement_raw)[:16]
        problems.append(_failed("statement", f"sha256 {digest} is not the record id"))
    signer, payload = _check_envelope(ctx, rid, files[ENVELOPE], problems)
    genuine = next((b for b in (statement_raw, payload) if b and record_id(b) == rid), None)
    subjects = _subjects(genuine, problems) if genuine else []
    problems += _check_artifacts(ctx, subjects)
    problems += _check_commit(ctx, rid)
    return RecordCheck(id=rid, verified=not problems, signer=signer, artifacts=len(subjects),
                       problems=problems)


def _subjects(statement: bytes, problems: list[Problem]) -> list[Subject]:
    """The artifacts a statement names; only `subject` is read, so a statement from a
    newer registry with more predicate fields still verifies."""
    try:
        return [Subject.model_validate(s) for s in loads_json(statement)["subject"]]
    except (ValueError, KeyError, TypeError):  # pydantic's ValidationError is a ValueError
        problems.append(_failed("statement", "does not list its artifacts as in-toto subjects"))
        return []


def _ledger_file(ctx: _Ledger, rid: str, name: str, problems: list[Problem]) -> bytes | None:
    part = name.removesuffix(".json")
    committed = ctx.tree.get(f"{RECORDS}/{rid}/{name}")
    try:
        raw = (ctx.ledger.record_dir(rid) / name).read_bytes()
    except FileNotFoundError:
        problems.append(_failed(part, f"{name} is missing from the ledger folder"))
        return ctx.ledger.blob(committed) if committed else None
    if committed is None:
        problems.append(_failed(part, f"{name} was never committed to the ledger"))
    elif blob_sha(raw) != committed:
        problems.append(_failed(part, f"{name} differs from its ledger commit"))
    return raw


def _check_envelope(ctx: _Ledger, rid: str, raw: bytes | None,
                    problems: list[Problem]) -> tuple[str | None, bytes | None]:
    if raw is None:
        return None, None
    try:
        envelope = dsse.parse_envelope(raw)
        payload = envelope.payload_bytes()
        if record_id(payload) != rid:
            raise VerificationFailed("envelope: its payload is not this record's statement")
        return dsse.verify(envelope, ctx.trusted), payload
    except RegistryError as e:
        part, _, detail = e.message.partition(": ")
        problems.append(Problem(part=part, detail=detail, exit_code=int(e.exit_code)))
        return None, None


def _check_artifacts(ctx: _Ledger, subjects: list[Subject]) -> list[Problem]:
    out = []
    for subject in subjects:
        state = ctx.state(subject.sha256)
        if state is ObjectState.missing:
            out.append(Problem(part=f"artifact {subject.name}", exit_code=ExitCode.UNVERIFIABLE,
                               detail=f"object {subject.sha256[:16]} is missing from the store"))
        elif state is ObjectState.corrupt:
            out.append(_failed(f"artifact {subject.name}",
                               f"stored bytes no longer hash to {subject.sha256[:16]}"))
    return out


def _check_commit(ctx: _Ledger, rid: str) -> list[Problem]:
    events = ctx.history.get(rid, [])
    out = [_failed("ledger", f"{e.file} {'changed' if e.status == 'M' else 'touched'} after "
                   f"sealing, by commit {e.commit[:12]}") for e in events if e.status != "A"]
    added = {e.commit for e in events if e.status == "A"}
    sealed = ctx.sealed_by.get(rid)
    if sealed is None:
        out.append(Problem(part="index", exit_code=ExitCode.UNVERIFIABLE,
                           detail="record not in the index: its sealing commit is unknown "
                                  "(run registry reindex)"))
    elif sealed not in ctx.commits:
        out.append(_failed("ledger", f"sealing commit {sealed[:12]} is no longer in the ledger "
                                     "history (rewritten)"))
    elif added != {sealed}:
        out.append(_failed("ledger", f"record files were added by {sorted(added)}, not by its "
                                     f"sealing commit {sealed[:12]}"))
    return out


def _failed(part: str, detail: str) -> Problem:
    return Problem(part=part, detail=detail, exit_code=ExitCode.FAILED)
