"""Write one record, whole or not at all.

Order: artifacts into objects/ (temp + fsync + rename, outside the lock), then under
the home lock one index transaction (rows invisible until committed), then the ledger
commit, then the index row is marked with that commit. A crash at any point leaves
a whole record or none: orphan objects are harmless, a row without a commit is never
shown and is settled against the ledger by the next writer, and an uncommitted
ledger folder is cleared by `Ledger.recover`.

`REGISTRY_TEST_CRASH_AT=objects|index|ledger` makes the process exit right after
that step: a fault-injection point for the reliability tests, inert otherwise (pull
and push have their own points: registry/team/sync.py, `CRASH_POINTS`).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, model_validator

from registry.base.canonical import to_jsonable
from registry.base.hashing import Progress
from registry.base.model import Frozen
from registry.base.safeload import SURROGATE
from registry.base.secrets import redact_bytes, redact_json, scan_file
from registry.errors import InvalidInput, Refused
from registry.formats.display import short_id
from registry.formats.record import (
    Predicate,
    Statement,
    Subject,
    parse_statement,
    record_id,
    statement_bytes,
    summary_line,
)
from registry.measure.display import degraded_meaning, quality_lines
from registry.signing import dsse
from registry.signing.keyring import Role
from registry.signing.keys import Signer as Signer
from registry.signing.keys import signing_key
from registry.store.home import Home
from registry.store.index import Index, entry_rows, open_index
from registry.store.ledger import STATEMENT, Ledger, adding_commit
from registry.store.objects import ObjectStore
from registry.store.transaction import transaction

CRASH_ENV = "REGISTRY_TEST_CRASH_AT"


class Artifact(Frozen):
    """A file to seal, from disk or from memory, under its name in the record."""
    name: str
    path: Path | None = None
    data: bytes | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Artifact:
        if (self.path is None) == (self.data is None):
            raise ValueError("an artifact has a path or data, not both")
        return self


class SealedRecord(Frozen):
    id: str
    ledger_commit: str
    summary: str
    signer: str
    artifacts: int
    bytes: int
    measurement: list[str] = Field(default_factory=list, description="per suite: quality")
    already: bool = Field(False, description="sealed before: this is that record "
                                             "(registry/seal/existing.py)")


def write_record(home: Home, artifacts: list[Artifact], predicate: Predicate,
                 signer: Signer | None = None, progress: Progress | None = None) -> SealedRecord:
    """Store, sign, index and commit one record; `progress` gets bytes hashed."""
    keyid, key = ready_signer(home, signer)
    artifacts, predicate = without_secrets(artifacts, predicate)
    subjects, size = _store(ObjectStore(home.objects), artifacts, progress)
    crash_point("objects")
    statement = Statement(subject=subjects, predicate=predicate)
    data = statement_bytes(statement)
    rid = record_id(data)
    envelope = dsse.envelope_bytes(dsse.sign(data, keyid, key))
    summary = summary_line(predicate)
    index = open_index(home)
    with transaction(home) as ledger:
        index.create()
        settle(index, ledger)
        commit = sealing_commit(ledger, rid)
        if commit is None:
            with index.sealing(rid):  # other homes sharing the index leave these rows
                # rows from the signed bytes read back, as every reader derives them (a
                # float 2.0 is `2` in canonical JSON and comes back an int)
                index.add(entry_rows(rid, parse_statement(data), keyid))
                crash_point("index")
                commit = ledger.commit_record(rid, data, envelope, f"{rid}\n\n{summary}",
                                              (keyid, key))
                crash_point("ledger")
                index.mark_committed(rid, commit)
    return SealedRecord(id=rid, ledger_commit=commit, summary=summary, signer=keyid,
                        artifacts=len(subjects), bytes=size,
                        measurement=quality_lines(predicate.results)
                        + [m for m in [degraded_meaning(predicate.results)] if m])


def without_secrets(artifacts: list[Artifact], predicate: Predicate
                    ) -> tuple[list[Artifact], Predicate]:
    """Every artifact and the predicate with each secret replaced before anything is
    hashed, and the predicate saying what was replaced, where and why; an artifact
    holding a private key is refused (registry/base/secrets.py)."""
    kept, found = [], []
    for a in artifacts:
        seen = scan_file(a.path, a.name) if a.path is not None else []
        data = a.path.read_bytes() if seen and a.path is not None else a.data
        if data is not None:
            data, seen = redact_bytes(data, a.name)
        kept.append(a if not seen else Artifact(name=a.name, data=data))
        found += seen
    shown, inside = redact_json(to_jsonable(predicate), "predicate")
    if inside:
        predicate = Predicate.model_validate(shown)
    found = [*(predicate.redactions or []), *found, *inside]
    return kept, predicate.model_copy(update={"redactions": found}) if found else predicate


def ready_signer(home: Home, signer: Signer | None = None) -> Signer:
    """The signing key (default: the user's), refused unless the home trusts it: checked
    before long work (a run) as well as when sealing."""
    from registry.store.trust import current_keyring

    keyid, key = signer or signing_key()
    if keyid not in current_keyring(home).current.with_role(Role.signer):
        raise Refused(f"signing key {short_id(keyid)} is not a signer in the keyring of "
                      f"{home.root}",
                      hint=f"a root holder runs `registry keys trust KEY.pub` for it "
                           f"(registry keys export {short_id(keyid)} > KEY.pub)")
    return keyid, key


def _store(store: ObjectStore, artifacts: list[Artifact],
           progress: Progress | None) -> tuple[list[Subject], int]:
    names = [a.name for a in artifacts]
    for a in artifacts:  # a name is signed as UTF-8 JSON: a non-UTF-8 file name cannot be
        if not a.name.isascii() and SURROGATE.search(a.name):
            shown = str(a.path or a.name).encode("utf-8", "backslashreplace").decode()
            raise InvalidInput(f"{shown}: the file name is not UTF-8",
                               hint="rename the file: a record names its artifacts in UTF-8")
    if len(set(names)) != len(names):
        raise ValueError(f"artifact names must be unique: {sorted(names)}")
    subjects, size = [], 0
    for a in sorted(artifacts, key=lambda a: a.name):
        if a.path is not None:
            stored = store.put_file(a.path, progress)
        else:
            stored = store.put_bytes(a.data or b"")
        subjects.append(Subject(name=a.name, digest={"sha256": stored.sha256}))
        size += stored.size
    return subjects, size


def sealing_commit(ledger: Ledger, rid: str) -> str | None:
    """The ledger commit that added the record, if it is in the ledger."""
    if not (ledger.record_dir(rid) / STATEMENT).exists():
        return None
    return adding_commit(ledger.path, rid)


def settle(index: Index, ledger: Ledger) -> None:
    """Index rows left without a commit by a crash: keep them if the ledger has the
    record, drop them otherwise (call holding the home lock)."""
    for rid in index.pending():
        commit = sealing_commit(ledger, rid)
        if commit:
            index.mark_committed(rid, commit)
        elif not index.being_sealed(rid):  # another home's seal in progress: not debris
            index.drop(rid)


def settle_pending(home: Home, index: Index) -> None:
    """Settle before reading when a seal crashed (rare; waits for a seal in progress)."""
    with transaction(home) as ledger:
        settle(index, ledger)


def crash_point(step: str) -> None:
    """Exit at once (as kill -9 would leave things) when the fault-injection
    variable names this step."""
    if os.environ.get(CRASH_ENV) == step:
        os._exit(86)
