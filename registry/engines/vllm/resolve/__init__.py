"""vLLM's resolver rules: its config line and args (`engine.py`), the identity fields they
prove (`fields.py`, `runtime.py`, `content.py`), the KV precision and capacity cross-check
(`kv.py`, `precision.py`, `capacity.py`), speculative decoding acceptance (`spec.py`)."""

from __future__ import annotations

from pathlib import Path

from registry.engines.base import Given
from registry.engines.vllm.declared import declared_values
from registry.engines.vllm.logs import scan_log
from registry.engines.vllm.resolve.activations import activation_fields, launch_env
from registry.engines.vllm.resolve.content import content_fields
from registry.engines.vllm.resolve.engine import EngineLog, Start
from registry.engines.vllm.resolve.fields import Fields
from registry.engines.vllm.resolve.precision import kv_fields
from registry.engines.vllm.resolve.runtime import (
    env_fields,
    kv_report_fields,
    runtime_fields,
    weight_fields,
)
from registry.engines.vllm.resolve.spec import phase_notes, spec_stats
from registry.formats.identity import FIELDS, Evidence, ResolvedField, ResolvedIdentity
from registry.formats.rundir import METRICS_AFTER, METRICS_BEFORE
from registry.logs import Fact, LogScan
from registry.logs.prometheus import Scrape
from registry.recipe import Recipe
from registry.resolve.inputs import Checkpoints, locate_checkpoints, not_read, read_metrics
from registry.resolve.markers import expect_results

__all__ = ["resolve_vllm", "scan_vllm_log"]


def resolve_vllm(run_dir: Path, path: Path, name: str, recipe: Recipe | None,
                 given: Given) -> ResolvedIdentity:
    """A vLLM run's identity from its log `name` (at `path`), its `/metrics` scrapes and
    its checkpoint(s)."""
    checkpoints = given.checkpoints
    scan = given.scan or scan_vllm_log(path, recipe)
    log = EngineLog(scan, name)
    before, after = read_metrics(run_dir, METRICS_BEFORE), read_metrics(run_dir, METRICS_AFTER)
    if checkpoints is None or not checkpoints.given:
        named = (log.setting("model")[0], log.speculative.get("model"))
        found = locate_checkpoints(
            given.checkpoint, given.draft_checkpoint,
            (recipe.model.path, recipe.draft.path if recipe.draft else None) if recipe
            and not given.confined else (None, None),
            (None, None) if given.confined else named)
        if given.confined:
            found.notes += not_read(named, (given.checkpoint, given.draft_checkpoint))
        if checkpoints is None:
            checkpoints = found
        else:
            checkpoints.target, checkpoints.draft = found.target, found.draft
            checkpoints.notes[:] = found.notes
    fields = _fields(Fields(log, declared_values(recipe) if recipe else {}), checkpoints, after,
                     launch_env(run_dir))
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


def scan_vllm_log(path: Path, recipe: Recipe | None) -> LogScan:
    """The log, its `[[expect]]` markers counted."""
    return scan_log(path, {e.name: e.pattern for e in recipe.expect} if recipe else {})


def _fields(f: Fields, checkpoints: Checkpoints, after: Scrape | None,
            launch: dict[str, tuple[str, Evidence]]) -> dict[str, ResolvedField]:
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
    activation_fields(f, checkpoints, launch)
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
