"""What the resolver reads: the engine log's file, recipe, metrics scrapes, checkpoints.

The log is the file named (`--log`), else the first of LOG_NAMES that matches exactly
one file in the run directory. The checkpoint comes from the argument, else the
recipe's model path when it exists on disk after `${VAR}` expansion, else the model
path in the log when it exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from registry.base.canonical import digest
from registry.checkpoint.manifest import Manifest
from registry.checkpoint.models import CheckpointInfo
from registry.errors import InvalidInput, Refused
from registry.formats.rundir import (
    METRICS_AFTER,
    METRICS_BEFORE,
    RECIPE_JSON,
    RECIPE_TOML,
    SERVER_LOG,
    read_model,
)
from registry.logs.prometheus import Scrape, read_prometheus
from registry.recipe import Recipe, load_recipe

# Where engine logs are found, in order: the project's own name, then what other
# harnesses call a server's output (`<run>-server.log`, `server.stdout.log`).
LOG_NAMES = (SERVER_LOG, "*server*.log", "*.stdout.log", "*server*.txt", "*vllm*.log")

# The lab's record capsules name the scrapes after the suite.
METRICS_ALIASES = {METRICS_BEFORE: "metrics-before-suite.prom",
                   METRICS_AFTER: "metrics-after-suite.prom"}


@dataclass
class Checkpoints:
    target: CheckpointInfo | None = None
    draft: CheckpointInfo | None = None
    notes: list[str] = field(default_factory=list)
    # release-file manifests by role ("checkpoint", "draft checkpoint"): filled when the
    # files are hashed, or given from a record's sealed evidence
    manifests: dict[str, Manifest] = field(default_factory=dict)
    given: bool = False  # from sealed evidence: never looked for on disk


def find_log(run_dir: Path, name: Path | None) -> Path:
    """The run's engine log: `name` (relative to the run directory, or a path), else the
    first pattern of LOG_NAMES with exactly one match; several matches are refused."""
    if not run_dir.is_dir():
        what = "not a run directory" if run_dir.exists() else "no such run directory"
        raise InvalidInput(f"{run_dir}: {what}")
    if name is not None:
        path = name if name.is_absolute() else run_dir / name
        if not path.is_file():
            raise InvalidInput(f"{path}: no such log file")
        return path
    for pattern in LOG_NAMES:
        found = sorted(p for p in run_dir.glob(pattern) if p.is_file())
        if len(found) == 1:
            return found[0]
        if found:
            raise InvalidInput(f"{run_dir}: several logs match {pattern}: "
                               f"{', '.join(p.name for p in found[:5])}",
                               hint="name the engine log with --log NAME")
    raise InvalidInput(f"{run_dir}: no {SERVER_LOG} (nor {', '.join(LOG_NAMES[1:])})",
                       hint="a run directory holds the engine log; name it with --log NAME")


def load_run_recipe(run_dir: Path, recipe: Recipe | None, recipe_path: Path | None
                    ) -> Recipe | None:
    """The recipe a run declares: the given one, else the run directory's own. A recipe
    named for a run that kept its own must be the same one: declared values are what ran."""
    if recipe is not None:
        return recipe
    kept = next((run_dir / n for n in (RECIPE_JSON, RECIPE_TOML) if (run_dir / n).is_file()), None)
    if recipe_path is None:
        return load_recipe_any(kept) if kept else None
    named = load_recipe_any(recipe_path)
    if kept is not None and digest(load_recipe_any(kept)) != digest(named):
        raise Refused(f"{recipe_path} is not the recipe this run used ({kept})",
                      hint="the file changed since the run: seal without --recipe to use what ran")
    return named


def load_recipe_any(path: Path) -> Recipe:
    """A recipe file as written (TOML), or a run directory's normalized `recipe.json`."""
    if path.suffix == ".json":
        recipe: Recipe = read_model(path, Recipe)
        return recipe
    return load_recipe(path)


def read_metrics(run_dir: Path, name: str) -> Scrape | None:
    for candidate in (name, METRICS_ALIASES[name]):
        if (run_dir / candidate).is_file():
            return read_prometheus(run_dir / candidate)
    return None


def expand(path: str | None) -> Path | None:
    """A recipe path with `${VAR}` expanded; None while a variable is unset."""
    if not path:
        return None
    expanded = os.path.expandvars(path)
    return None if "$" in expanded else Path(expanded)


def locate_checkpoints(explicit: Path | None, explicit_draft: Path | None,
                       recipe_paths: tuple[str | None, str | None],
                       log_paths: tuple[str | None, str | None]) -> Checkpoints:
    found = Checkpoints()
    found.target = _inspect(explicit, recipe_paths[0], log_paths[0], "checkpoint", found.notes)
    found.draft = _inspect(explicit_draft, recipe_paths[1], log_paths[1], "draft checkpoint",
                           found.notes)
    return found


def _inspect(explicit: Path | None, recipe_path: str | None, log_path: str | None, what: str,
             notes: list[str]) -> CheckpointInfo | None:
    from registry.checkpoint.inspect import inspect_checkpoint

    if explicit is not None:
        return inspect_checkpoint(explicit)  # the user named it: its errors are theirs
    for origin, candidate in (("recipe", expand(recipe_path)),
                              ("log", Path(log_path) if log_path else None)):
        if candidate is None or not candidate.exists():
            continue
        try:
            info = inspect_checkpoint(candidate)
        except InvalidInput as e:
            notes.append(f"{what} at {candidate} (from the {origin}) not inspected: {e.message}")
            return None
        notes.append(f"{what} inspected at {candidate} (path from the {origin})")
        return info
    return None


def not_read(named: tuple[str | None, ...], given: tuple[Path | None, ...]) -> list[str]:
    """Notes for the checkpoints a confined resolve (an import) leaves unread: the log
    names them, they lie on this disk, and the user named none with --checkpoint."""
    return [f"checkpoint not read: the log names {path}, outside the capsule (name it with "
            "--checkpoint to read it)"
            for path, own in zip(named, given, strict=True)
            if path and own is None and Path(os.path.expandvars(path)).exists()]
