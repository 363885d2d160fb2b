"""`registry resolve RECORD`: re-run the resolver on a sealed record's own evidence (its
engine log, metrics scrapes, recipe and sealed checkpoint evidence, read from the
object store; no checkpoint on disk, nothing else) and compare, field by field, with
the identity the record's signer vouched for.

A record sealed before checkpoint evidence was sealed re-resolves without a
checkpoint: the fields only the checkpoint proves then come out `unresolved` and are
reported as differing, which is the honest answer.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from registry.base.hashing import sha256_file
from registry.base.model import Frozen
from registry.errors import Unverifiable, VerificationFailed
from registry.formats.display import short_id
from registry.formats.identity import ResolvedField, ResolvedIdentity, status_for
from registry.formats.record import Statement
from registry.store.home import Home
from registry.store.objects import ObjectStore

IMPORT_ROLES = ("server.log", "metrics-before.prom", "metrics-after.prom")


class FieldCheck(Frozen):
    name: str
    signed: Any
    again: Any
    signed_status: str | None
    status: str | None
    same: bool


class Reresolved(Frozen):
    id: str
    evidence: list[str]  # the sealed checkpoint evidence used
    fields: list[FieldCheck]
    identity: ResolvedIdentity  # the re-resolved identity, with its evidence

    @property
    def reproduced(self) -> bool:
        return all(f.same for f in self.fields)


def reresolve_record(home: Home, prefix: str) -> Reresolved:
    from registry.store.query import sealed_statement

    rid, statement = sealed_statement(home, prefix)
    return reresolve(home, rid, statement)


def reresolve(home: Home, rid: str, statement: Statement) -> Reresolved:
    from registry.resolve import resolve_run
    from registry.resolve.evidence import FOLDER, evidence_checkpoints

    files = _files(home, statement)
    p = statement.predicate
    with tempfile.TemporaryDirectory(prefix="registry-reresolve-") as tmp:
        staged = Path(tmp)
        for name in _staged_names(statement):
            target = staged / (_import_role(statement, name) if p.imported else name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(files[name])
        if not any(staged.iterdir()) or (p.imported and not (staged / "server.log").exists()):
            (staged / "server.log").write_bytes(b"")
        checkpoints = evidence_checkpoints(lambda n: files[n].read_bytes() if n in files else None)
        with _unset(_variables(p.recipe)):
            identity = resolve_run(staged, recipe=_recipe(p.recipe), checkpoints=checkpoints)
    if p.imported and not p.recipe:
        identity = _with_signed_declared(identity, p.identity)
    checks = [_compare(name, p.identity.fields.get(name), identity.fields.get(name))
              for name in sorted({*p.identity.fields, *identity.fields})]
    return Reresolved(id=rid, evidence=sorted(n for n in files if n.startswith(f"{FOLDER}/")),
                      fields=checks, identity=identity)


def _files(home: Home, statement: Statement) -> dict[str, Path]:
    """Subject name -> its object, each checked against its digest (a reviewer's
    machine may hold objects pulled from anywhere)."""
    store = ObjectStore(home.objects)
    wanted = set(_staged_names(statement))
    out = {}
    for s in statement.subject:
        path = store.path(s.sha256)
        if not path.is_file():
            raise Unverifiable(f"artifact {s.name}: object {short_id(s.sha256)} is not in this "
                               "home",
                               hint="registry pull brings a record's objects")
        checked = s.name.startswith("evidence/") or s.name in wanted
        if checked and sha256_file(path) != s.sha256:
            raise VerificationFailed(f"artifact {s.name}: its object no longer hashes to "
                                         f"{short_id(s.sha256)}", hint="registry verify --all")
        out[s.name] = path
    return out


def _staged_names(statement: Statement) -> list[str]:
    """The artifacts the resolver reads: for an import, the files the capsule's roles
    name; for a sealed run, the run directory's files (not the evidence or sources)."""
    p = statement.predicate
    if p.imported:
        return [name for role in IMPORT_ROLES if (name := p.artifacts.get(role))]
    names = [s.name for s in statement.subject]
    return [n for n in names if _safe(n) and not n.startswith(("evidence/", "sources/"))]


def _import_role(statement: Statement, name: str) -> str:
    return next(role for role in IMPORT_ROLES if statement.predicate.artifacts.get(role) == name)


def _safe(name: str) -> bool:
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and "\0" not in name


def _variables(recipe: dict[str, Any] | None) -> set[str]:
    return set(re.findall(r"\$\{(\w+)\}", json.dumps(recipe))) if recipe else set()


@contextmanager
def _unset(names: set[str]) -> Iterator[None]:
    """A recipe path's `${VAR}` is this machine's setting: unset while re-resolving, it
    is the wildcard it was for the sealer's own value, so the answer is the same on
    any machine."""
    saved = {n: os.environ.pop(n) for n in names if n in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def _recipe(recipe: dict[str, Any] | None) -> Any:
    from registry.recipe.schema import Recipe

    return Recipe.model_validate(recipe) if recipe else None


def _with_signed_declared(identity: ResolvedIdentity, signed: ResolvedIdentity
                          ) -> ResolvedIdentity:
    """An import without a recipe took its declared values from the capsule's files:
    the signed ones are those."""
    fields = dict(identity.fields)
    for name, f in signed.fields.items():
        if f.declared is None:
            continue
        again = fields.get(name) or ResolvedField(status=status_for(None, None))
        fields[name] = again.model_copy(update={"declared": f.declared,
                                                "status": status_for(f.declared, again.resolved)})
    return identity.model_copy(update={"fields": fields})


def _compare(name: str, signed: ResolvedField | None, again: ResolvedField | None) -> FieldCheck:
    def value(f: ResolvedField | None) -> Any:
        return None if f is None else f.resolved

    def status(f: ResolvedField | None) -> str | None:
        return None if f is None else f.status.value

    same = value(signed) == value(again) and status(signed) == status(again) and \
        (signed.declared if signed else None) == (again.declared if again else None)
    return FieldCheck(name=name, signed=value(signed), again=value(again),
                      signed_status=status(signed), status=status(again), same=same)
