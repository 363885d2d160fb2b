"""Load what `diff` compares from either a sealed record or an unsealed run directory.

A record brings its signed identity, results, sources and rows; a run directory is
resolved on the spot (no sources: nothing was captured yet).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from registry.compare.diff import Side
from registry.errors import VerificationFailed
from registry.formats.display import short_id
from registry.formats.rundir import BENCH
from registry.formats.unproven import mark
from registry.store.home import Home

if TYPE_CHECKING:
    from registry.formats.record import Statement
    from registry.formats.rundir import Bench
    from registry.recipe.schema import Recipe


def load_side(ref: str, *, home: Path | None = None) -> Side:
    """`ref` is a run directory when one exists at that path, else a record id or prefix."""
    path = Path(ref)
    if path.is_dir():
        return side_from_run_dir(path)
    from registry.store.home import find_home

    return side_from_record(find_home(home), ref)


def side_from_record(home: Home, prefix: str) -> Side:
    """The record's signed identity and sources; its metrics re-derived from its rows."""
    from registry.contracts.sealed import sealed_run
    from registry.store.query import sealed_statement

    rid, statement = sealed_statement(home, prefix)
    predicate = statement.predicate
    if statement.subject_named(predicate.artifacts.get(BENCH, BENCH)) is None:
        return side_from_sealed(rid, statement, None, None)  # e.g. an engine-only run
    run = sealed_run(home, rid, statement)
    if not run.bench_intact:
        raise VerificationFailed(f"record {short_id(rid)}: its {BENCH} was changed after sealing",
                                 hint=f"registry verify {short_id(rid)}")
    return side_from_sealed(rid, statement, run.bench, run.recipe)


def side_from_sealed(rid: str, statement: Statement, bench: Bench | None,
                     recipe: Recipe | None) -> Side:
    """A record already read (its rows checked against their signed digest by the caller):
    its metrics and published figures re-derived from its rows."""
    from registry.importer.published import recheck
    from registry.measure.results import suite_results

    predicate = statement.predicate
    side = Side(label=rid, identity=predicate.identity, sources=predicate.sources,
                unproven=mark(predicate.unproven, predicate.identity),
                published=recheck(predicate.published, bench.rows if bench else None))
    if bench is None:
        return side
    return side.model_copy(update={"results": suite_results(bench, recipe), "rows": bench.rows,
                                   "suites": {s.name: s.sha256 for s in bench.suites}})


def side_as_signed(rid: str, statement: Statement, bench: Bench | None) -> Side:
    """A record already read, with its signed figures (what its own page shows) and its
    rows (checked against their signed digest by the caller) for the outputs: the
    report's diffs, so that a diff page never states a figure the record page does not."""
    side = side_from_sealed(rid, statement, None, None)
    if bench is None:
        return side
    return side.model_copy(update={"results": statement.predicate.results, "rows": bench.rows,
                                   "suites": {s.name: s.sha256 for s in bench.suites}})


def side_from_run_dir(run_dir: Path) -> Side:
    from registry.formats import rundir
    from registry.measure.results import suite_results
    from registry.resolve import resolve_run
    from registry.resolve.inputs import load_run_recipe

    recipe = load_run_recipe(run_dir, None, None)
    identity = resolve_run(run_dir, recipe=recipe)
    unproven = mark(None, identity)
    if not (run_dir / rundir.BENCH).is_file():
        return Side(label=str(run_dir), identity=identity, unproven=unproven)
    bench = rundir.read_model(run_dir / rundir.BENCH, rundir.Bench)
    return Side(label=str(run_dir), identity=identity, results=suite_results(bench, recipe),
                rows=bench.rows, suites={s.name: s.sha256 for s in bench.suites},
                unproven=unproven)
