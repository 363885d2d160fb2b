"""The llama.cpp resolver: a llama-server run's identity from its log, each field named
as docs/engines.md lists it (`precision.kv_cache_k`, `kv.cells`, `spec.n_max`, ...)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from registry.engines.llamacpp.declared import declared_settings
from registry.engines.llamacpp.gguf import GGUFInfo, read_gguf
from registry.engines.llamacpp.logs import LlamaScan, ServerStart, scan_llamacpp
from registry.engines.llamacpp.resolve.capacity import capacity_check, weights_check
from registry.engines.llamacpp.resolve.fields import (
    cache_fields,
    context_fields,
    engine_fields,
    offload_fields,
    quality_fields,
    spec_fields,
    timing_fields,
    weight_fields,
)
from registry.engines.llamacpp.resolve.out import Out
from registry.errors import InvalidInput
from registry.formats.identity import FIELDS, ResolvedIdentity
from registry.resolve.inputs import not_read

__all__ = ["resolve_llamacpp"]


def resolve_llamacpp(path: Path, source: str, declared: dict[str, Any],
                     scan: LlamaScan | None = None, checkpoint: Path | None = None,
                     models: tuple[str | Path | None, ...] = (),
                     log_models: bool = True) -> ResolvedIdentity:
    """`path`: the llama-server log; `source`: its name in the run directory (evidence
    cites it); `declared`: what the recipe declares, under the field names; `checkpoint`:
    the target GGUF the user named (a malformed one is their error: `InvalidInput`);
    `models`: where else it may be (the first that exists, then, with `log_models`, the
    model paths the log names: an import reads none of those, they are not its evidence)."""
    scan = scan or scan_llamacpp(path)
    launcher = declared_settings({f.values["key"]: f.values["value"] for f in scan.settings})
    out = Out(source=source, declared={**launcher, **declared})
    start = _identity_start(scan)
    engine_fields(out, scan, start)
    notes: list[str] = [f"declared by the launcher's settings atop {source} (lines "
                        f"{scan.settings[0].line}-{scan.settings[-1].line}): "
                        f"{', '.join(sorted(launcher))}"] if launcher else []
    if start is not None:
        weight_fields(out, start)
        cache_fields(out, start)
        context_fields(out, start)
        offload_fields(out, start)
        spec_fields(out, start)
        quality_fields(out, start)
        begin = start.first("start")
        logged = begin.values["path"] if begin else None
        gguf = read_gguf(checkpoint) if checkpoint else _gguf(
            (*models, logged if log_models else None), notes)
        if gguf is not None:
            weights_check(out, gguf)
            capacity_check(out, start, gguf)
        draft = next((m for m in start.models if m.role == "draft"), None)
        meta = draft.first("model_meta") if draft else None
        draft_path = meta.values["path"] if meta else None
        draft_gguf = _gguf((draft_path,), notes) if log_models else None
        if not log_models:
            notes += not_read((None if checkpoint else logged, draft_path), (None, None))
        if draft_gguf is not None:
            weights_check(out, draft_gguf, "precision.draft_weights")
    timing_fields(out, scan)
    order = {name: i for i, name in enumerate(FIELDS)}
    return ResolvedIdentity(
        fields=dict(sorted(out.fields.items(), key=lambda kv: order.get(kv[0], len(order)))),
        errors=[out.evidence(e) for e in scan.errors],
        notes=[*notes, *_notes(scan, source, start)],
    )


def _gguf(candidates: tuple[str | Path | None, ...], notes: list[str]) -> GGUFInfo | None:
    """The first candidate GGUF on disk, read (a file that is not one is a note)."""
    for candidate in candidates:
        if candidate is None or not Path(os.path.expandvars(str(candidate))).is_file():
            continue
        try:
            return read_gguf(Path(os.path.expandvars(str(candidate))))
        except InvalidInput as e:
            notes.append(f"checkpoint not read: {e.message}")
            return None
    return None


def _identity_start(scan: LlamaScan) -> ServerStart | None:
    """The first server start that became ready, else the first."""
    return next((s for s in scan.starts if s.first("ready")), scan.starts[0] if scan.starts
                else None)


def _is_server(scan: LlamaScan) -> bool:
    """llama-server prints `loading model '...'` and its ready line; llama-cli and
    llama-perplexity print neither."""
    return any(s.first("start") or s.first("ready") or s.first("n_slots") for s in scan.starts)


def _notes(scan: LlamaScan, source: str, start: ServerStart | None) -> list[str]:
    notes = []
    if scan.bytes == 0:
        notes.append(f"{source} is empty")
    elif scan.recognised is None:
        notes.append(f"unreadable log: {source} holds no line llama.cpp prints")
    if scan.cut_off:
        notes.append(f"{source} ends mid-line (cut off)")
    return notes + _run_notes(scan, source, start)


def _run_notes(scan: LlamaScan, source: str, start: ServerStart | None) -> list[str]:
    """Which run is the identity, whether it became ready, and why nothing was loaded."""
    notes, server = [], _is_server(scan)
    begin = start.first("start") if start else None
    if len(scan.starts) > 1 and begin is not None:
        notes.append(f"{source} holds {len(scan.starts)} server starts; the identity is the "
                     f"first that became ready (loading its model at line {begin.line})")
    elif len(scan.starts) > 1 and not server:
        notes += _other_runs(scan, source)
    if server and start is not None and start.first("ready") is None:
        notes.append(f"never ready: {source} has no `server is listening` line (the server "
                     "died while loading, or the log was cut off)")
    if start is not None and not start.models and scan.errors:
        # an argument llama.cpp could not parse, a backend that failed: nothing loaded
        notes.append(f"failed before loading a model: {scan.errors[0].text} (line "
                     f"{scan.errors[0].line})")
    elif scan.starts and not any(s.models for s in scan.starts):
        notes.append(f"{source} prints no model loader lines (a low verbosity, `-lv 3`, or "
                     "an excerpt): weights, KV types and cache sizes are unresolved")
    return notes


def _other_runs(scan: LlamaScan, source: str) -> list[str]:
    """A file of several llama.cpp programs (a CI log: llama-cli, then llama-perplexity):
    the identity is the first; what the others measured is named, not merged in."""
    notes = [f"{source} holds {len(scan.starts)} program runs (each from its `build:` line); "
             "the identity is the first"]
    for run in scan.starts[1:]:
        final = run.first("ppl_final")
        if final is not None:
            notes.append(f"a later run reports perplexity {final.values['ppl']} +/- "
                         f"{final.values['err']} (line {final.line}): that run's, not this "
                         "identity's")
    return notes
