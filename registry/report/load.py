"""The records a report shows, read through the same library paths as `show`, `check`
and `diff`: the statement from the ledger (refused when it no longer hashes to its id),
the raw rows from the object store, the verdict re-derived from those rows.

A record that cannot be read is not shown; it is listed with the reason instead, so
one bad record never hides the others.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from registry.base.model import Frozen
from registry.contracts.teacher import Teacher
from registry.errors import RegistryError
from registry.formats.display import short_id
from registry.formats.figures import Headline, Quality, record_headline
from registry.formats.record import Statement
from registry.formats.rundir import Bench, BenchRow
from registry.formats.verdict import Verdict
from registry.measure.metrics import decode_rate
from registry.recipe.schema import MetricFormula, Recipe
from registry.store.home import Home
from registry.store.rows import RecordRow
from registry.store.verifications import StoredVerification

Teachers = dict[str, "Teacher | RegistryError | None"]  # lane -> teacher, read once


class RowRate(Frozen):
    """One row's decode rate, for the charts only (the figures are the signed ones), with
    the flags the signed quality gave the row: a flagged row is in no figure."""

    suite: str
    prompt_id: str
    rate: float
    flags: tuple[str, ...] = ()


class RecordData(Frozen):
    """One record as a report shows it."""

    row: RecordRow
    statement: Statement
    recipe: Recipe | None
    bench: Bench | None
    bench_intact: bool | None
    verdict: Verdict | None
    verdict_note: str | None  # why there is no verdict
    rates: list[RowRate]  # decode rate per row, re-derived with the recipe's formula
    verifications: list[StoredVerification] = Field(
        default_factory=list, description="trusted attestations that judged the record")

    @property
    def id(self) -> str:
        return self.row.id

    @property
    def lane(self) -> str | None:
        return self.row.lane

    @property
    def headline(self) -> Headline:
        """The signed headline figure and quality: what every other view states."""
        p = self.statement.predicate
        return record_headline(p.results, p.imported is not None)

    @property
    def formula(self) -> tuple[MetricFormula, int]:
        if self.recipe is None:
            return MetricFormula.intervals_99, 100
        return self.recipe.benchmark.metric, self.recipe.benchmark.window


class Skipped(Frozen):
    id: str
    reason: str


def load_records(home: Home, rows: Sequence[RecordRow]) -> tuple[list[RecordData], list[Skipped]]:
    from registry.store.ledger import committed_ids
    from registry.store.verifications import all_verifications

    teachers: Teachers = {}
    committed = committed_ids(home.ledger)
    attested, _ = all_verifications(home)  # read once; the untrusted ones are never shown
    shown, skipped = [], []
    for row in rows:
        try:
            data = load_record(home, row, teachers, committed)
        except RegistryError as e:
            skipped.append(Skipped(id=row.id, reason=e.message))
            continue
        shown.append(data.model_copy(update={"verifications": [
            v for v in attested if data.id in v.statement.judged()]}))
    return shown, skipped


def load_record(home: Home, row: RecordRow, teachers: Teachers,
                committed: Sequence[str] | None = None) -> RecordData:
    from registry.contracts.sealed import sealed_run
    from registry.formats.record import parse_statement
    from registry.formats.rundir import BENCH
    from registry.store.query import checked_statement
    from registry.store.rows import signed_row

    rid, check, signed = checked_statement(home, row.id, committed)
    if not check.ok:
        raise check.error(f"record {short_id(rid)}")
    statement = parse_statement(signed)
    # shown as signed: the index row only chose the record (the ledger's id names its page)
    row = signed_row(rid, statement, check.signer, row.ledger_commit)
    predicate = statement.predicate
    if statement.subject_named(predicate.artifacts.get(BENCH, BENCH)) is None:
        return RecordData(row=row, statement=statement, recipe=None, bench=None,
                          bench_intact=None, verdict=None, verdict_note="no benchmark rows",
                          rates=[])
    run = sealed_run(home, rid, statement)
    verdict, note = _verdict(home, run.recipe, run.bench, statement, teachers)
    if not run.bench_intact:
        verdict, note = None, "bench.json was changed after sealing: no verdict"
    data = RecordData(row=row, statement=statement, recipe=run.recipe, bench=run.bench,
                      bench_intact=run.bench_intact, verdict=verdict, verdict_note=note,
                      rates=[])
    formula, window = data.formula
    flags = signed_flags([s.quality for s in predicate.results], [s.suite for s in
                                                                 predicate.results])
    return data.model_copy(update={"rates": row_rates(run.bench.rows, formula, window, flags)})


Flags = dict[tuple[str, int, int], list[str]]  # (suite, row index, round) -> flags


def signed_flags(qualities: Sequence[Quality | None], suites: Sequence[str]) -> Flags:
    return {(suite, q.index, q.round): [f.value for f in q.flags]
            for suite, quality in zip(suites, qualities, strict=True) if quality
            for q in quality.rows}


def row_rates(rows: Sequence[BenchRow], formula: MetricFormula, window: int,
              flags: Flags | None = None) -> list[RowRate]:
    out = []
    for r in rows:
        if r.error or not r.token_times_s:
            continue
        rate = decode_rate(r.token_times_s, formula, window)
        if rate is not None:
            out.append(RowRate(suite=r.suite, prompt_id=r.prompt_id, rate=rate,
                               flags=tuple((flags or {}).get((r.suite, r.index, r.round), []))))
    return out


def _verdict(home: Home, recipe: Recipe | None, bench: Bench, statement: Statement,
             teachers: Teachers) -> tuple[Verdict | None, str | None]:
    """The record's contract re-derived from its rows (the lane's teacher read once)."""
    from registry.contracts import evaluate, teacher_lane
    from registry.contracts.bindings import get_teacher
    from registry.recipe.schema import ContractName

    if recipe is None:
        return None, "no recipe: the contract is unknown"
    teacher: Teacher | None = None
    if recipe.quality.contract == ContractName.bitwise_teacher:
        lane = teacher_lane(recipe)
        if lane not in teachers:
            try:
                teachers[lane] = get_teacher(home, lane)
            except RegistryError as e:
                teachers[lane] = e
        found = teachers[lane]
        if isinstance(found, RegistryError):
            return None, f"the teacher of lane {lane} cannot be read: {found.message}"
        teacher = found
    try:
        verdict = evaluate(recipe, bench.rows, statement.predicate.identity, teacher,
                           suites=bench.suites)
    except RegistryError as e:
        return None, e.message
    return verdict, None if verdict else "contract none: nothing to judge"
