"""The teacher of each lane: when a record may become one, and reading one back.

Storage (a signed `teachers/<lane>.json` in the ledger and the index's `teachers`
table) is registry/store/teachers.py; only what a trusted key signed and committed
counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.base.versions import WIRE, refuse_newer
from registry.contracts.sealed import SealedRun, load_sealed
from registry.contracts.teacher import (
    SUITE_AXIS,
    Axes,
    Teacher,
    TeacherSource,
    binding_axes,
    declared_axes,
    kernel_axes,
    teacher_from_lab_oracles,
    teacher_from_rows,
)
from registry.errors import InvalidInput, NotFound, Refused, VerificationFailed
from registry.formats.display import short_id
from registry.formats.rundir import SuiteRef
from registry.store.home import Home
from registry.store.teachers import TEACHERS, StoredBinding, lanes, read_binding, save_binding


class TeacherBinding(Frozen):
    """What `teacher set|show` report: the lane's teacher without its token ids."""
    lane: str
    sha256: str
    ledger_commit: str
    signer: str
    source: TeacherSource
    axes: Axes
    prompts: list[str]


def set_teacher(home: Home, prefix: str, lane: str, *, suite: str | None = None) -> TeacherBinding:
    """Make the verified, greedy, cold record `prefix` the teacher of `lane`."""
    from registry.store.verify import verify_records

    run = load_sealed(home, prefix)
    report = verify_records(home, run.id)
    if report.worst is not None:
        problem = report.records[0].problems[0]
        raise Refused(f"record {short_id(run.id)} does not verify ({problem.part}: "
                      f"{problem.detail})",
                      hint=f"registry verify {short_id(run.id)}: a teacher must be intact")
    if run.recipe is None or run.recipe.benchmark.temperature != 0:
        raise Refused(f"record {short_id(run.id)} is not a greedy run (temperature 0)",
                      hint="a teacher's outputs must be deterministic references")
    name = _suite(run.bench.suites, suite, run.id)
    rows = [r for r in run.bench.rows if r.suite == name]
    warm = [r.index for r in rows if r.cached_tokens != 0]
    if warm:
        raise Refused(f"record {short_id(run.id)}: rows {warm} were not served cold "
                      "(cached_tokens)",
                      hint="a teacher is a cold run: prefix caching off, each prompt once")
    return save_teacher(home, _record_teacher(run, lane, name))


def _record_teacher(run: SealedRun, lane: str, suite: str) -> Teacher:
    """The teacher a record's rows of `suite` make: set from, and checked against, it."""
    rows = [r for r in run.bench.rows if r.suite == suite]
    sha256 = next(s.sha256 for s in run.bench.suites if s.name == suite)
    return teacher_from_rows(lane, rows, binding_axes(run.identity, sha256),
                             TeacherSource(kind="record", ref=run.id), kernel_axes(run.identity))


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
    """Sign and commit `teachers/<lane>.json` with the user's key, then index it."""
    from registry.store.writer import ready_signer

    message = f"teacher {teacher.lane}: {teacher.source.kind} {short_id(teacher.source.ref)}"
    stored = save_binding(home, teacher.lane, canonical_bytes(teacher), message,
                          ready_signer(home))
    return _binding(teacher, stored)


def _stored_teacher(home: Home, lane: str) -> tuple[Teacher, StoredBinding] | None:
    stored = read_binding(home, lane)
    if stored is None:
        return None
    document = loads_json(stored.payload)
    refuse_newer(document, "schema", "registry.teacher/", 1, f"teacher binding {lane!r}")
    return Teacher.model_validate(document, extra=WIRE), stored


def get_teacher(home: Home, lane: str) -> Teacher | None:
    """The committed, trusted teacher of `lane`, or None. A teacher set from a record must
    still be what that (signed, intact) record's rows make."""
    found = _stored_teacher(home, lane)
    if found is None:
        return None
    teacher = found[0]
    if teacher.source.kind != "record":
        return teacher
    run = load_sealed(home, teacher.source.ref)
    suite = next((s.name for s in run.bench.suites
                  if s.sha256 == teacher.axes.get(SUITE_AXIS)), None)
    made = None if suite is None else _record_teacher(run, lane, suite)
    if made is not None and teacher.kernel is None:  # set before kernels were bound
        made = made.model_copy(update={"kernel": None})
    if not run.bench_intact or made != teacher:
        raise VerificationFailed(f"the teacher of lane {lane} ({TEACHERS}/{lane}.json) no longer "
                                 f"matches record {short_id(run.id)} it was set from",
                                 hint=f"registry verify {short_id(run.id)}; then registry teacher "
                                      f"set {short_id(run.id)} --lane {lane}")
    return teacher


def show_teacher(home: Home, lane: str) -> TeacherBinding:
    found = _stored_teacher(home, lane)
    if found is None:
        raise NotFound(f"lane {lane!r} has no teacher",
                       hint=f"lanes with a teacher: {', '.join(lanes(home)) or 'none'}; "
                            "set one with `registry teacher set RECORD --lane LANE`")
    return _binding(*found)


def _binding(teacher: Teacher, stored: StoredBinding) -> TeacherBinding:
    return TeacherBinding(lane=teacher.lane, sha256=stored.sha256,
                          ledger_commit=stored.ledger_commit, signer=stored.signer,
                          source=teacher.source, axes=teacher.axes,
                          prompts=[r.prompt_id for r in teacher.rows])


def _suite(suites: list[SuiteRef], wanted: str | None, rid: str) -> str:
    names: list[str] = [s.name for s in suites]
    if wanted is None and len(names) == 1:
        return names[0]
    if wanted is not None and wanted in names:
        return wanted
    problem = (f"has no suite {wanted!r}" if wanted is not None
               else "has several: name the teacher's with --suite")
    raise InvalidInput(f"record {short_id(rid)} {problem} (suites: {', '.join(names) or 'none'})",
                       hint=f"--suite {names[0]}" if names else None)


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise InvalidInput(f"{folder}: expected one {pattern}, found {len(found)}",
                           hint="point at the lab capsule holding the teacher oracles")
    return found[0]
