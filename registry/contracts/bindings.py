"""The teacher of each lane, kept in the ledger as `teachers/<lane>.json` (canonical
JSON, one commit per change, so `git log` is the lane's history of references) and
in the index's `teachers` table, which `index_teachers` rebuilds from the ledger.

Only what is committed counts: readers take the file at the ledger's HEAD.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Column, Integer, MetaData, String, Table, Text, delete

from registry.canonical import canonical_bytes, digest
from registry.contracts.sealed import SealedRun, load_sealed
from registry.contracts.teacher import (
    SUITE_AXIS,
    Axes,
    Teacher,
    TeacherSource,
    binding_axes,
    declared_axes,
    teacher_from_lab_oracles,
    teacher_from_rows,
)
from registry.errors import InvalidInput, NotFound, Refused, VerificationFailed
from registry.rundir import SuiteRef
from registry.store.home import Home

TEACHERS = "teachers"

metadata = MetaData()
teachers = Table(
    "teachers", metadata,
    Column("lane", String(200), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("source_kind", String(20), nullable=False),
    Column("source_ref", String(64), nullable=False),
    Column("axes", Text, nullable=False, doc="canonical JSON"),
    Column("rows", Integer, nullable=False),
    Column("ledger_commit", String(40), nullable=False),
)


class TeacherBinding(BaseModel):
    """What `teacher set|show` report: the lane's teacher without its token ids."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lane: str
    sha256: str
    ledger_commit: str
    source: TeacherSource
    axes: Axes
    prompts: list[str]


def set_teacher(home: Home, prefix: str, lane: str, *, suite: str | None = None) -> TeacherBinding:
    """Make the verified, greedy, cold record `prefix` the teacher of `lane`."""
    from registry.verify import verify_records

    run = load_sealed(home, prefix)
    report = verify_records(home, run.id)
    if report.exit_code != 0:
        problem = report.records[0].problems[0]
        raise Refused(f"record {run.id[:16]} does not verify ({problem.part}: {problem.detail})",
                      hint=f"registry verify {run.id[:16]}: a teacher must be intact")
    if run.recipe is None or run.recipe.benchmark.temperature != 0:
        raise Refused(f"record {run.id[:16]} is not a greedy run (temperature 0)",
                      hint="a teacher's outputs must be deterministic references")
    name = _suite(run.bench.suites, suite, run.id)
    rows = [r for r in run.bench.rows if r.suite == name]
    warm = [r.index for r in rows if r.cached_tokens != 0]
    if warm:
        raise Refused(f"record {run.id[:16]}: rows {warm} were not served cold (cached_tokens)",
                      hint="a teacher is a cold run: prefix caching off, each prompt once")
    return save_teacher(home, _record_teacher(run, lane, name))


def _record_teacher(run: SealedRun, lane: str, suite: str) -> Teacher:
    """The teacher a record's rows of `suite` make: set from, and checked against, it."""
    rows = [r for r in run.bench.rows if r.suite == suite]
    sha256 = next(s.sha256 for s in run.bench.suites if s.name == suite)
    return teacher_from_rows(lane, rows, binding_axes(run.identity, sha256),
                             TeacherSource(kind="record", ref=run.id))


def import_lab_teacher(home: Home, capsule: Path, recipe_path: Path, *, lane: str | None = None,
                       axes: Mapping[str, str | None] | None = None) -> TeacherBinding:
    """The lab's two oracle files in `capsule`, bound to the recipe's declared axes."""
    from registry.contracts import teacher_lane
    from registry.recipe import load_recipe

    recipe = load_recipe(recipe_path)
    token, text = (_one(capsule, pattern) for pattern in
                   ("teacher-token-oracle-*.json", "teacher-text-sha256-*.json"))
    bound = declared_axes(recipe, dict(axes or {}))
    return save_teacher(home, teacher_from_lab_oracles(token, text, bound,
                                                       lane=lane or teacher_lane(recipe)))


def save_teacher(home: Home, teacher: Teacher) -> TeacherBinding:
    """Commit `teachers/<lane>.json` under the home lock, then index it."""
    from registry.store.ledger import Ledger
    from registry.store.lock import exclusive

    data = canonical_bytes(teacher)
    path = f"{TEACHERS}/{teacher.lane}.json"
    with exclusive(home.lock_file):
        ledger = Ledger(home.ledger)
        ledger.recover()
        ledger.commit_file(path, data, f"teacher {teacher.lane}: {teacher.source.kind} "
                                       f"{teacher.source.ref[:16]}")
        binding = _binding(teacher, ledger.last_commit(path))
        _index(home, [binding])
    return binding


def get_teacher(home: Home, lane: str) -> Teacher | None:
    """The committed teacher of `lane`, or None. A teacher set from a record must still be
    what that (signed, intact) record's rows make: the ledger file itself is unsigned."""
    from registry.store.ledger import Ledger

    data = _committed(Ledger(home.ledger), f"{TEACHERS}/{lane}.json")
    if data is None:
        return None
    teacher = Teacher.model_validate_json(data)
    if teacher.source.kind != "record":
        return teacher
    run = load_sealed(home, teacher.source.ref)
    suite = next((s.name for s in run.bench.suites
                  if s.sha256 == teacher.axes.get(SUITE_AXIS)), None)
    if not run.bench_intact or suite is None or _record_teacher(run, lane, suite) != teacher:
        raise VerificationFailed(f"the teacher of lane {lane} ({TEACHERS}/{lane}.json) no longer "
                                 f"matches record {run.id[:16]} it was set from",
                                 hint=f"registry verify {run.id[:16]}; then registry teacher "
                                      f"set {run.id[:16]} --lane {lane}")
    return teacher


def show_teacher(home: Home, lane: str) -> TeacherBinding:
    from registry.store.ledger import Ledger

    ledger = Ledger(home.ledger)
    path = f"{TEACHERS}/{lane}.json"
    data = _committed(ledger, path)
    if data is None:
        known = sorted(Path(p).stem for p in ledger.tree_files(TEACHERS))
        raise NotFound(f"lane {lane!r} has no teacher",
                       hint=f"lanes with a teacher: {', '.join(known) or 'none'}; "
                            "set one with `registry teacher set RECORD --lane LANE`")
    return _binding(Teacher.model_validate_json(data), ledger.last_commit(path))


def index_teachers(home: Home) -> int:
    """Rebuild the index's teachers table from the ledger; returns the count."""
    from registry.store.ledger import Ledger

    ledger = Ledger(home.ledger)
    lanes = [Path(p).stem for p in ledger.tree_files(TEACHERS) if p.endswith(".json")]
    bindings = [show_teacher(home, lane) for lane in lanes]
    _index(home, bindings, replace_all=True)
    return len(bindings)


def _index(home: Home, bindings: list[TeacherBinding], *, replace_all: bool = False) -> None:
    from registry.store.index import open_index

    engine = open_index(home).engine
    metadata.create_all(engine)
    with engine.begin() as db:
        lanes = [b.lane for b in bindings]
        db.execute(delete(teachers) if replace_all else
                   delete(teachers).where(teachers.c.lane.in_(lanes)))
        if bindings:
            db.execute(teachers.insert(), [_index_row(b) for b in bindings])


def _index_row(b: TeacherBinding) -> dict[str, Any]:
    return {"lane": b.lane, "sha256": b.sha256, "source_kind": b.source.kind,
            "source_ref": b.source.ref, "axes": json.dumps(b.axes, sort_keys=True),
            "rows": len(b.prompts), "ledger_commit": b.ledger_commit}


def _binding(teacher: Teacher, commit: str) -> TeacherBinding:
    return TeacherBinding(lane=teacher.lane, sha256=digest(teacher), ledger_commit=commit,
                          source=teacher.source, axes=teacher.axes,
                          prompts=[r.prompt_id for r in teacher.rows])


def _committed(ledger: Any, path: str) -> bytes | None:
    sha = ledger.tree_files(path).get(path)
    return None if sha is None else bytes(ledger.blob(sha))


def _suite(suites: list[SuiteRef], wanted: str | None, rid: str) -> str:
    names: list[str] = [s.name for s in suites]
    if wanted is None and len(names) == 1:
        return names[0]
    if wanted is not None and wanted in names:
        return wanted
    problem = (f"has no suite {wanted!r}" if wanted is not None
               else "has several: name the teacher's with --suite")
    raise InvalidInput(f"record {rid[:16]} {problem} (suites: {', '.join(names) or 'none'})",
                       hint=f"--suite {names[0]}" if names else None)


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise InvalidInput(f"{folder}: expected one {pattern}, found {len(found)}",
                           hint="point at the lab capsule holding the teacher oracles")
    return found[0]
