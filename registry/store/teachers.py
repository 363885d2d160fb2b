"""Teacher bindings as stored: `teachers/<lane>.json` in the ledger, a DSSE envelope
signed by the key that set it (one signed commit per change, so `git log` is the
lane's history of references), and the index's `teachers` table, rebuilt from the
ledger at will.

The store reads only a binding's summary fields (lane, source, axes, row count);
what a teacher means and when one may be set is registry/contracts. Readers get a
binding only if a trusted key signed it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import Table, Text, delete
from sqlmodel import Field, SQLModel

from registry.base.canonical import sha256_hex
from registry.base.model import Frozen
from registry.base.safeload import BadDocument, loads_json
from registry.errors import InvalidInput, RegistryError
from registry.formats.display import short_id
from registry.signing import dsse
from registry.signing.keys import Signer
from registry.store.home import Home
from registry.store.ledger import Ledger

if TYPE_CHECKING:
    from registry.signing.keyring import Keyring
    from registry.signing.signed import SignatureCheck

TEACHERS = "teachers"
PAYLOAD_TYPE = "application/vnd.registry.teacher+json"

class TeacherEntry(SQLModel, table=True):
    """The index row of a lane's binding."""

    __tablename__ = "teachers"

    lane: str = Field(primary_key=True, max_length=200)
    sha256: str = Field(max_length=64)
    source_kind: str = Field(max_length=20)
    source_ref: str = Field(max_length=64)
    axes: str = Field(sa_type=Text, description="canonical JSON")
    rows: int
    ledger_commit: str = Field(max_length=40)


teachers: Table = TeacherEntry.__table__  # type: ignore[attr-defined]


class _Source(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: str
    ref: str


class _Summary(BaseModel):
    """The fields of a binding the index keeps."""

    model_config = ConfigDict(extra="ignore")
    lane: str
    source: _Source
    axes: dict[str, str | None]
    rows: list[object]


class BindingChange(Frozen):
    """One ledger commit that set a lane's teacher, with the teacher as signed."""

    at: str  # the commit's date, ISO 8601
    commit: str
    teacher: str | None  # "record 3f2a9c41..." / "lab ..."; None when not shown
    problem: str | None = None  # why the teacher is not shown (unsigned, unreadable)


class StoredBinding(Frozen):
    lane: str
    sha256: str  # of the payload
    ledger_commit: str
    signer: str
    payload: bytes


def path_of(lane: str) -> str:
    return f"{TEACHERS}/{lane}.json"


def save_binding(home: Home, lane: str, payload: bytes, message: str,
                 signer: Signer) -> StoredBinding:
    """Sign and commit a lane's binding under the home lock, then index it."""
    from registry.store.transaction import transaction

    keyid, key = signer
    envelope = dsse.envelope_bytes(dsse.sign(payload, keyid, key, PAYLOAD_TYPE))
    with transaction(home) as ledger:
        ledger.commit_file(path_of(lane), envelope, message, signer)
        stored = StoredBinding(lane=lane, sha256=sha256_hex(payload),
                               ledger_commit=ledger.last_commit(path_of(lane)), signer=keyid,
                               payload=payload)
        _index(home, [stored])
    return stored


def lanes(home: Home) -> list[str]:
    files = Ledger(home.ledger).tree_files(TEACHERS)
    return sorted(Path(p).stem for p in files if p.endswith(".json"))


def read_binding(home: Home, lane: str) -> StoredBinding | None:
    """The committed binding of `lane` as a trusted key signed it; None when the lane
    has none; refused when its signature does not verify."""
    from registry.store.trust import current_keyring

    ledger = Ledger(home.ledger)
    sha = ledger.tree_files(path_of(lane)).get(path_of(lane))
    if sha is None:
        return None
    check, payload = _signed(ledger.blob(sha), current_keyring(home).current)
    if not check.ok or payload is None or check.signer is None:
        raise check.error(f"the teacher of lane {lane} ({path_of(lane)})")
    return StoredBinding(lane=lane, sha256=sha256_hex(payload), signer=check.signer,
                         ledger_commit=ledger.last_commit(path_of(lane)), payload=payload)


def _signed(envelope: bytes, keyring: Keyring) -> tuple[SignatureCheck, bytes | None]:
    """A binding envelope's signature check under `keyring`, and its payload."""
    from registry.signing.signed import check_signed

    try:
        payload = dsse.parse_envelope(envelope).payload_bytes()
    except RegistryError:
        payload = None
    return check_signed(payload, envelope, expected_id=None, payload_type=PAYLOAD_TYPE,
                        keyring=keyring), payload


def binding_history(home: Home, lane: str) -> list[BindingChange]:
    """Every commit that set `lane`'s teacher, oldest first, each binding read from the
    ledger's object store through the hardened git and shown only when a key of the
    current keyring signed it (a binding is a DSSE envelope, never read as plain JSON)."""
    from registry.store.git import git_text
    from registry.store.ledger import BRANCH
    from registry.store.trust import current_keyring

    ledger = Ledger(home.ledger)
    if not ledger.head():
        return []
    log = git_text(ledger.path, "log", "--reverse", "--no-abbrev", "--raw", "--no-renames",
                   "--format=commit %H %cI", BRANCH, "--", path_of(lane))
    changes = _changes(log)
    blobs = ledger.blobs([blob for _, _, blob in changes if blob])
    keyring = current_keyring(home).current
    return [_change(commit, at, blobs.get(blob) if blob else None, keyring)
            for commit, at, blob in changes]


def _changes(log: str) -> list[tuple[str, str, str | None]]:
    """(commit, date, new blob or None when deleted) from `git log --raw` output."""
    out: list[tuple[str, str, str | None]] = []
    for line in log.splitlines():
        if line.startswith("commit "):
            _, commit, at = line.split(" ", 2)
            out.append((commit, at, None))
        elif line.startswith(":") and out:
            blob = line.split()[3]  # :mode mode old new status
            out[-1] = (*out[-1][:2], None if set(blob) == {"0"} else blob)
    return out


def _change(commit: str, at: str, envelope: bytes | None, keyring: Keyring) -> BindingChange:
    if envelope is None:
        return BindingChange(at=at, commit=commit, teacher=None, problem="binding removed")
    check, payload = _signed(envelope, keyring)
    if not check.ok or payload is None:
        return BindingChange(at=at, commit=commit, teacher=None,
                             problem=f"{check.trust.value}: {check.detail}")
    try:
        source = _Summary.model_validate(loads_json(payload)).source
    except (BadDocument, ValidationError) as e:
        return BindingChange(at=at, commit=commit, teacher=None,
                             problem=f"not a teacher binding ({str(e).splitlines()[0]})")
    return BindingChange(at=at, commit=commit, teacher=f"{source.kind} {short_id(source.ref)}")


def index_bindings(home: Home) -> int:
    """Rebuild the index's teachers table from the ledger's verified bindings."""
    stored = [b for lane in lanes(home) if (b := read_binding(home, lane)) is not None]
    _index(home, stored, replace_all=True)
    return len(stored)


def _index(home: Home, bindings: list[StoredBinding], *, replace_all: bool = False) -> None:
    from registry.store.index import open_index

    engine = open_index(home).engine
    SQLModel.metadata.create_all(engine, tables=[teachers])
    rows = [_row(b) for b in bindings]
    with engine.begin() as db:
        db.execute(delete(teachers) if replace_all else
                   delete(teachers).where(teachers.c.lane.in_([b.lane for b in bindings])))
        if rows:
            db.execute(teachers.insert(), rows)


def _row(b: StoredBinding) -> dict[str, object]:
    try:
        s = _Summary.model_validate_json(b.payload)
    except ValidationError as e:
        raise InvalidInput(f"{path_of(b.lane)}: not a teacher binding "
                           f"({e.errors()[0]['msg']})") from None
    return {"lane": b.lane, "sha256": b.sha256, "source_kind": s.source.kind,
            "source_ref": s.source.ref, "axes": json.dumps(s.axes, sort_keys=True),
            "rows": len(s.rows), "ledger_commit": b.ledger_commit}
