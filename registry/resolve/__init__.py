"""The resolver: a run directory's real identity, each field proven from evidence.

`resolve_run` reads the engine log (`server.log`, another name found in the run
directory, or the one named; streamed once), the recipe, the `/metrics` scrapes and
the checkpoint(s), and returns a `ResolvedIdentity`: per field the declared and
resolved values, a status, the rule that decided and the evidence. What the log
itself says about the run (read or not, engine starts, ready or not) is in the notes.
"""

from __future__ import annotations

from pathlib import Path

from registry.formats.identity import FIELDS, ResolvedField, ResolvedIdentity
from registry.formats.rundir import METRICS_AFTER, METRICS_BEFORE
from registry.logs import Fact, LogScan, scan_log
from registry.logs.prometheus import Scrape
from registry.recipe import Recipe
from registry.resolve.content import content_fields
from registry.resolve.declared import declared_values
from registry.resolve.dialect import engine_of
from registry.resolve.engine import EngineLog, Start
from registry.resolve.fields import Fields
from registry.resolve.inputs import (
    Checkpoints,
    find_log,
    load_run_recipe,
    locate_checkpoints,
    not_read,
    read_metrics,
)
from registry.resolve.llamacpp import resolve_llamacpp
from registry.resolve.markers import expect_results
from registry.resolve.precision import kv_fields
from registry.resolve.runtime import env_fields, kv_report_fields, runtime_fields, weight_fields
from registry.resolve.spec import phase_notes, spec_stats

__all__ = ["resolve_run", "scan_run_log"]


def resolve_run(run_dir: Path, *, recipe: Recipe | None = None, recipe_path: Path | None = None,
                checkpoint: Path | None = None, draft_checkpoint: Path | None = None,
                log_path: Path | None = None, scan: LogScan | None = None,
                checkpoints: Checkpoints | None = None, confined: bool = False
                ) -> ResolvedIdentity:
    """`log_path`: the engine log, relative to `run_dir` or absolute (default: found);
    `scan`: that log already scanned with `scan_run_log` (seal reads it too);
    `checkpoints`: what the checkpoints say, given (a record's sealed evidence) instead
    of looked for on disk. Seal passes an empty one and keeps what it was filled with.
    `confined`: read no checkpoint but the ones given (import: a capsule's log or recipe
    may name any file on the importer's disk; that file is not the capsule's evidence)."""
    run_dir = Path(run_dir)
    path = find_log(run_dir, log_path)
    recipe = load_run_recipe(run_dir, recipe, recipe_path)
    name = str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)
    if engine_of(recipe, path) == "llama.cpp":  # its own reader (a vLLM `scan` reads nothing)
        return resolve_llamacpp(path, name, declared_values(recipe), checkpoint=checkpoint,
                                models=() if confined or not recipe else (recipe.model.path,),
                                log_models=not confined)
    scan = scan or scan_log(path, _markers(recipe))
    log = EngineLog(scan, name)
    before, after = read_metrics(run_dir, METRICS_BEFORE), read_metrics(run_dir, METRICS_AFTER)
    if checkpoints is None or not checkpoints.given:
        named = (log.setting("model")[0], log.speculative.get("model"))
        found = locate_checkpoints(
            checkpoint, draft_checkpoint,
            (recipe.model.path, recipe.draft.path if recipe.draft else None) if recipe
            and not confined else (None, None), (None, None) if confined else named)
        if confined:
            found.notes += not_read(named, (checkpoint, draft_checkpoint))
        if checkpoints is None:
            checkpoints = found
        else:
            checkpoints.target, checkpoints.draft = found.target, found.draft
            checkpoints.notes[:] = found.notes
    fields = _fields(Fields(log, declared_values(recipe)), checkpoints, after)
    spec_tokens = fields["spec.num_tokens"].resolved if "spec.num_tokens" in fields else None
    peak = scan.kv_usage_peak
    return ResolvedIdentity(
        fields=fields,
        expect=expect_results(recipe.expect, scan.markers, recipe.parallel.world_size, name)
        if recipe else [],
        spec_decode=spec_stats(before, after, scan.spec, scan.spec_phases, spec_tokens),
        kv_usage_peak=float(peak.values["pct"]) if peak else None,
        errors=[log.evidence(e) for e in _unique_lines([*scan.errors, *scan.exceptions])],
        notes=[*checkpoints.notes, *_log_notes(scan, name, log.start),
               *phase_notes(scan.spec_phases)],
    )


def scan_run_log(run_dir: Path, recipe: Recipe | None, log_path: Path | None = None) -> LogScan:
    """The run's engine log, its `[[expect]]` markers counted."""
    return scan_log(find_log(Path(run_dir), log_path), _markers(recipe))


def _markers(recipe: Recipe | None) -> dict[str, str]:
    return {e.name: e.pattern for e in recipe.expect} if recipe else {}


def _fields(f: Fields, checkpoints: Checkpoints, after: Scrape | None
            ) -> dict[str, ResolvedField]:
    """Every field, in the order of `registry.formats.identity.FIELDS` (KV precision last: it
    reads the dtype, version, parallel and runtime fields)."""
    f.engine()
    f.model()
    f.speculative()
    f.parallel()
    f.graph()
    f.attention()
    runtime_fields(f, after)
    kv_report_fields(f)
    env_fields(f)
    weight_fields(f, checkpoints)
    content_fields(f, checkpoints)
    kv_fields(f, checkpoints)
    order = {name: i for i, name in enumerate(FIELDS)}
    return dict(sorted(f.out.items(), key=lambda item: order.get(item[0], len(order))))


def _unique_lines(facts: list[Fact]) -> list[Fact]:
    """ERROR messages and traceback ends, each line once (an exception line is both)."""
    first: dict[int, Fact] = {}
    for fact in facts:
        first.setdefault(fact.line, fact)
    return list(first.values())


def _log_notes(scan: LogScan, name: str, start: Start) -> list[str]:
    notes = []
    if scan.bytes == 0:
        notes.append(f"{name} is empty")
    elif scan.empty:
        notes.append(f"unreadable log: {name} ({scan.bytes:,} bytes, {scan.lines:,} lines) holds "
                     "no line a vLLM server prints: every field is unresolved")
    if scan.cut_off:
        notes.append(f"{name} ends mid-line (cut off)")
    if start.count > 1:
        which = "the first that reached ready" if start.ready else "the first"
        notes.append(f"{name} holds {start.count} engine starts before the server was ready; "
                     f"the identity is {which} (lines {start.after + 1}-"
                     f"{min(start.before - 1, scan.lines)})")
    if not scan.empty and not start.ready:
        notes.append(f"never ready: {name} has no `Starting vLLM server` line (the engine died "
                     "while loading, the log was cut off, or an offline run without a server)")
    if scan.engine_restarts:
        notes.append(f"the engine started {scan.engine_restarts} more time(s) after the server "
                     "was ready; the identity is the first start's")
    if scan.exceptions:
        notes.append(f"the engine raised: {scan.exceptions[-1].text}")
    return notes
