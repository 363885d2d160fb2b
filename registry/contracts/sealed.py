"""A sealed record's raw rows, read back for judging: the bench.json object named by
the signed statement, with whether it still hashes to the signed digest.

The record's stored verdict is carried along for display only; contracts never
read it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import ValidationError

from registry.base.model import Frozen
from registry.errors import InvalidInput, Unverifiable, VerificationFailed
from registry.formats import rundir
from registry.formats.display import short_id
from registry.formats.identity import ResolvedIdentity
from registry.formats.record import Statement
from registry.formats.rundir import Bench
from registry.formats.verdict import Verdict
from registry.recipe.schema import Recipe
from registry.store.home import Home


class SealedRun(Frozen):
    id: str
    recipe: Recipe | None
    identity: ResolvedIdentity
    bench: Bench
    bench_intact: bool  # the stored rows still hash to the digest the record signed
    stored_verdict: Verdict | None  # what the record claims: shown, never trusted


def load_sealed(home: Home, prefix: str) -> SealedRun:
    """The record `prefix` (an id or unique prefix) with its raw bench rows."""
    from registry.store.query import sealed_statement

    return sealed_run(home, *sealed_statement(home, prefix))


def sealed_run(home: Home, rid: str, statement: Statement) -> SealedRun:
    """A parsed record with its raw bench rows read back from the object store."""
    from registry.store.objects import ObjectStore

    predicate = statement.predicate
    name = predicate.artifacts.get(rundir.BENCH, rundir.BENCH)
    subject = statement.subject_named(name)
    if subject is None:
        raise InvalidInput(f"record {short_id(rid)} has no {rundir.BENCH}: no rows to judge",
                           hint="only records of a benchmark run carry a quality verdict")
    path = ObjectStore(home.objects).path(subject.sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise Unverifiable(f"record {short_id(rid)}: the {name} object {path} is missing",
                           hint=f"registry verify {short_id(rid)}") from None
    intact = hashlib.sha256(data).hexdigest() == subject.sha256
    return SealedRun(id=rid, recipe=_recipe(rid, predicate.recipe),
                     identity=predicate.identity, bench=_bench(rid, name, data, intact),
                     bench_intact=intact,
                     stored_verdict=predicate.contract.verdict if predicate.contract else None)


def _bench(rid: str, name: str, data: bytes, intact: bool) -> Bench:
    try:
        return Bench.model_validate_json(data)
    except ValidationError as e:
        error = InvalidInput if intact else VerificationFailed
        why = "" if intact else " was changed after sealing and"
        raise error(f"record {short_id(rid)}: {name}{why} is not a bench file "
                    f"({e.errors()[0]['msg']})", hint=f"registry verify {short_id(rid)}") from None


def _recipe(rid: str, raw: dict[str, Any] | None) -> Recipe | None:
    if raw is None:
        return None
    try:
        return Recipe.model_validate(raw)
    except ValidationError as e:
        raise InvalidInput(f"record {short_id(rid)}: its recipe no longer validates "
                           f"({e.errors()[0]['msg']})",
                           hint="the recipe schema changed since sealing") from None


def carried(home: Home, statement: Statement, name: str) -> bytes | None:
    """The bytes of artifact `name` when the record carries it and they still hash as
    signed; None otherwise (the caller says what is missing)."""
    from registry.store.objects import ObjectStore

    subject = statement.subject_named(name)
    if subject is None:
        return None
    try:
        data = ObjectStore(home.objects).path(subject.sha256).read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == subject.sha256 else None
