"""The container and launcher fields: what the runtime said of the image before the
start (container.json) and the launcher's digest (launcher.json), each held against the
recipe where it declares one (a pinned image digest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from registry.formats import rundir
from registry.formats.identity import Evidence, ResolvedField, Status
from registry.recipe.schema import Recipe


def container_fields(run_dir: Path, recipe: Recipe | None) -> dict[str, ResolvedField]:
    out: dict[str, ResolvedField] = {}
    spec = recipe.engine.container if recipe else None
    facts = _read(run_dir / rundir.CONTAINER, rundir.ContainerFacts)
    if isinstance(facts, rundir.ContainerFacts):
        declared = spec.image.rsplit("@", 1)[1] if spec and spec.pinned else None
        values: dict[str, tuple[Any, Any]] = {
            "container.image_digest": (declared, facts.image_digest),
            "container.image_id": (None, facts.image_id),
            "container.image_created": (None, facts.image_created),
            "container.runtime": (spec.runtime if spec else None, facts.runtime),
            "container.runtime_version": (None, facts.runtime_version),
        }
        for name, (want, got) in values.items():
            out[name] = _field(want, got, rundir.CONTAINER, f"{name.split('.')[1]}: {got}")
    elif spec is not None:  # a container recipe whose run kept no container.json
        out["container.image_digest"] = ResolvedField(
            declared=spec.image.rsplit("@", 1)[1] if spec.pinned else None, resolved=None,
            status=Status.unresolved, note=f"no readable {rundir.CONTAINER} in the run")
    launcher = _read(run_dir / rundir.LAUNCHER, rundir.LauncherFacts)
    if isinstance(launcher, rundir.LauncherFacts):
        out["launcher.sha256"] = _field(None, launcher.sha256, rundir.LAUNCHER,
                                        f"{Path(launcher.path).name}: sha256 {launcher.sha256}")
    return out


def _read(path: Path, model: type[rundir.ContainerFacts] | type[rundir.LauncherFacts]
          ) -> rundir.ContainerFacts | rundir.LauncherFacts | None:
    if not path.is_file() or path.is_symlink():
        return None
    try:
        return model.model_validate_json(path.read_bytes()[:1_000_000])
    except (ValidationError, ValueError, OSError):
        return None


def _field(declared: Any, resolved: Any, source: str, text: str) -> ResolvedField:
    if resolved is None:
        status = Status.unresolved
    elif declared is None:
        status = Status.undeclared
    else:
        status = Status.confirmed if declared == resolved else Status.mismatch
    return ResolvedField(declared=declared, resolved=resolved, status=status, rule="runtime",
                         evidence=[Evidence(source=source, text=text)] if resolved else [])
