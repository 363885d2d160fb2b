"""The resolver: a run directory's real identity, each field proven from evidence.

`resolve_run` reads the engine log (`server.log`, another name found in the run
directory, or the one named; streamed once), the recipe, the `/metrics` scrapes and
the checkpoint(s), and returns a `ResolvedIdentity`: per field the declared and
resolved values, a status, the rule that decided and the evidence. What the log
itself says about the run (read or not, engine starts, ready or not) is in the notes.
"""

from __future__ import annotations

from pathlib import Path

from registry.engines.base import Given
from registry.formats.identity import ResolvedIdentity
from registry.logs import LogScan
from registry.recipe import Recipe
from registry.resolve.container import container_fields
from registry.resolve.dialect import engine_of
from registry.resolve.inputs import Checkpoints, find_log, load_run_recipe

__all__ = ["resolve_run", "scan_run_log"]


def resolve_run(run_dir: Path, *, recipe: Recipe | None = None, recipe_path: Path | None = None,
                checkpoint: Path | None = None, draft_checkpoint: Path | None = None,
                log_path: Path | None = None, scan: LogScan | None = None,
                checkpoints: Checkpoints | None = None, confined: bool = False
                ) -> ResolvedIdentity:
    """The run's identity (`_resolve_run` below: engine log, checkpoints, metrics) with the
    container's and launcher's fields (registry/resolve/container.py)."""
    run_dir = Path(run_dir)
    identity = _resolve_run(run_dir, recipe=recipe, recipe_path=recipe_path,
                            checkpoint=checkpoint, draft_checkpoint=draft_checkpoint,
                            log_path=log_path, scan=scan, checkpoints=checkpoints,
                            confined=confined)
    extra = container_fields(run_dir, load_run_recipe(run_dir, recipe, recipe_path))
    if not extra:
        return identity
    return identity.model_copy(update={"fields": {**identity.fields, **extra}})


def _resolve_run(run_dir: Path, *, recipe: Recipe | None = None,
                 recipe_path: Path | None = None, checkpoint: Path | None = None,
                 draft_checkpoint: Path | None = None, log_path: Path | None = None,
                 scan: LogScan | None = None, checkpoints: Checkpoints | None = None,
                 confined: bool = False) -> ResolvedIdentity:
    """`log_path`: the engine log, relative to `run_dir` or absolute (default: found);
    `scan`: that log already scanned with `scan_run_log` (seal reads it too);
    `checkpoints`: what the checkpoints say, given (a record's sealed evidence) instead
    of looked for on disk. Seal passes an empty one and keeps what it was filled with.
    The engine that wrote the log (registry.resolve.dialect) resolves it. `confined`:
    read no checkpoint but the ones given (import: a capsule's log or recipe may name any
    file on the importer's disk; that file is not the capsule's evidence)."""
    run_dir = Path(run_dir)
    path = find_log(run_dir, log_path)
    recipe = load_run_recipe(run_dir, recipe, recipe_path)
    name = str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)
    given = Given(checkpoint=checkpoint, draft_checkpoint=draft_checkpoint, scan=scan,
                  checkpoints=checkpoints, confined=confined)
    return engine_of(recipe, path).resolve(run_dir, path, name, recipe, given)


def scan_run_log(run_dir: Path, recipe: Recipe | None, log_path: Path | None = None) -> LogScan:
    """The run's engine log, its `[[expect]]` markers counted."""
    path = find_log(Path(run_dir), log_path)
    return engine_of(recipe, path).scan_log(
        path, {e.name: e.pattern for e in recipe.expect} if recipe else {})
