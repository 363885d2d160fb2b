"""What a capsule declares, without a recipe: from the engine's own `non-default args`
line, the launch file's command line or named values, the lab's identity/env files, a
summary's `identity` block and the capsule's README, in that order of precedence. Every
value names the file (and key or line) that declared it.

Which arguments mean which field is the engine's to say (its plug-in's `declared_*`): the
engine that claims the launch's command line, else the engine whose signature the log's
head matches, else the unnamed default. A declaration is never a resolved value: the
resolver's evidence decides, and a disagreement is a `mismatch` shown with both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registry.base.model import Frozen
from registry.engines.base import EnginePlugin
from registry.engines.plugin import plugins, unnamed
from registry.errors import InvalidInput
from registry.importer.walk import load_json
from registry.resolve.dialect import engine_of

MAX_PAIRS = 10_000  # KEY=VALUE pairs kept from one file (an environment dump holds ~200)
MAX_PAIR = 1 << 16  # bytes of one KEY=VALUE line
README_LIMIT = 1 << 20  # a README is prose: a larger file is not read
# a README's own statement of the model it ran (`- Model: `org/name``, `Model: org/name`)
README_MODEL = re.compile(r"^\s*(?:[-*]\s*)?\**model\**\s*:\s*\**\s*`?([\w./:-]+)`?\s*$",
                          re.IGNORECASE)


class Declared(Frozen):
    values: dict[str, Any]
    sources: dict[str, str]  # field -> "file: key" or "file:line"

    def merged(self, lower: Declared) -> Declared:
        """These values, then `lower`'s for fields not declared here."""
        extra = {k: v for k, v in lower.values.items() if k not in self.values}
        return Declared(values={**self.values, **extra},
                        sources={**self.sources, **{k: lower.sources[k] for k in extra}})


EMPTY = Declared(values={}, sources={})


def declared_from(capsule: Path, log: str | None, launches: list[str], identities: list[str],
                  summaries: list[str] | None = None, readmes: list[str] | None = None
                  ) -> Declared:
    engine, argv = _argv_engine(capsule, launches)
    engine = engine or (engine_of(None, capsule / log) if log else unnamed())
    out = _from_log(capsule, log, engine) if log else EMPTY
    for name in launches:
        out = out.merged(argv.get(name) or _named(engine, load_json(capsule / name), name))
    for name in identities:
        data = load_json(capsule / name) if name.endswith(".json") else \
            key_values(capsule / name)
        out = out.merged(_named(engine, data, name))
    for name in summaries or []:
        out = out.merged(_summary(engine, capsule, name))
    for name in readmes or []:
        out = out.merged(_readme(capsule, name))
    return out


def _declared(values: Mapping[str, Any], source: str) -> Declared:
    return Declared(values=dict(values), sources=dict.fromkeys(values, source))


def _argv_engine(capsule: Path, launches: list[str]
                 ) -> tuple[EnginePlugin | None, dict[str, Declared]]:
    """Each launch kept as a command line, read by the engine that claims it (plug-ins
    that name a default last); the first such engine is the capsule's."""
    engine: EnginePlugin | None = None
    out: dict[str, Declared] = {}
    ordered = sorted(plugins().values(), key=lambda p: p.unnamed_default)
    for name in launches:
        data = load_json(capsule / name)
        if isinstance(data, dict) and isinstance(data.get("argv"), list):
            data = data["argv"]
        if not (isinstance(data, list) and all(isinstance(a, str) for a in data)):
            continue
        for plugin in ordered:
            if (values := plugin.declared_launch(data)) is not None:
                engine = engine or plugin
                out[name] = _declared(values, f"{name}: argv")
                break
    return engine, out


def _from_log(capsule: Path, log: str, engine: EnginePlugin) -> Declared:
    found = engine.declared_log(capsule / log)
    if found is None:
        return EMPTY
    values, line = found
    return _declared(values, f"{log}:{line} (non-default args)")


def _named(engine: EnginePlugin, data: Any, name: str) -> Declared:
    return _declared(engine.declared_named(data), name) if isinstance(data, dict) else EMPTY


def _summary(engine: EnginePlugin, capsule: Path, name: str) -> Declared:
    """A summary's or screen receipt's own `identity` block (`tensor_parallel_size`,
    `max_model_len`, `model_revision`, `vllm_head`), and the model it names."""
    data = load_json(capsule / name)
    if not isinstance(data, dict):
        return EMPTY
    inner = data.get("identity")
    block: dict[str, Any] = inner if isinstance(inner, dict) else {}
    values = dict(engine.declared_named(block))
    model = block.get("model") or data.get("model")
    if isinstance(model, str) and model.strip():
        values["model.path"] = model.strip()
    if isinstance(revision := block.get("model_revision"), str) and revision.strip():
        values["model.revision"] = revision.strip()
    if isinstance(commit := block.get("vllm_head"), str) and commit.strip():
        values.setdefault("engine.commit", commit.strip())
    return _declared(values, f"{name}: identity")


def _readme(capsule: Path, name: str) -> Declared:
    """The model a capsule's README says it ran (`- Model: `org/name``): prose, so only a
    line that states it plainly; never more than a declaration."""
    path = capsule / name
    try:
        if path.stat().st_size > README_LIMIT:
            return EMPTY
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return EMPTY
    for number, line in enumerate(lines, 1):
        if (m := README_MODEL.match(line)) is not None:
            return Declared(values={"model.path": m.group(1)},
                            sources={"model.path": f"{name}:{number}"})
    return EMPTY


def key_values(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (identity.txt, *.env), read as a stream; other lines skipped. What
    is kept goes into the statement: more than MAX_PAIRS pairs, or a line over MAX_PAIR
    bytes, is refused naming the file (no environment dump or identity file is that big)."""
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    with open(path, "rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(MAX_PAIR + 1), b""), 1):
            if len(raw) > MAX_PAIR and not raw.endswith(b"\n"):
                raise InvalidInput(f"{path}: line {number} is over {MAX_PAIR:,} bytes: not a "
                                   "KEY=VALUE file")
            k, sep, v = raw.decode(errors="replace").rstrip("\r\n").partition("=")
            if sep and k.strip() and " " not in k.strip():
                out[k.strip()] = v
            if len(out) > MAX_PAIRS:
                raise InvalidInput(f"{path}: more than {MAX_PAIRS:,} KEY=VALUE lines: not an "
                                   "environment dump or identity file",
                                   hint="take it out of the capsule, or cut it to what the "
                                        "run's environment was")
    return out
