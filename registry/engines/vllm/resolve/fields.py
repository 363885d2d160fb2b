"""Identity fields from the log, the recipe and the checkpoint; each names its rule.

KV precision is decided in `kv.py`; this module covers everything else. A field no
evidence supports is `unresolved`, never guessed.
"""

from __future__ import annotations

import os
import re
from typing import Any

from registry.engines.vllm.logs.messages import Kind
from registry.engines.vllm.resolve.engine import EngineLog
from registry.formats.identity import Evidence, ResolvedField, Status, status_for


def make(declared: Any, resolved: Any, rule: str, ev: list[Evidence | None], *,
         note: str | None = None, self_reported: bool = False,
         status: Status | None = None) -> ResolvedField:
    return ResolvedField(declared=declared, resolved=resolved,
                         status=status or status_for(declared, resolved), rule=rule,
                         evidence=[e for e in ev if e is not None], note=note,
                         self_reported=self_reported)


class Fields:
    """Builds `name -> ResolvedField` from the engine log and the declared values."""

    def __init__(self, log: EngineLog, declared: dict[str, Any]) -> None:
        self.log = log
        self.declared = declared
        self.out: dict[str, ResolvedField] = {}

    def put(self, name: str, resolved: Any, rule: str, *ev: Evidence | None, **kw: Any) -> None:
        self.out[name] = make(self.declared.get(name), resolved, rule, list(ev), **kw)

    def setting(self, name: str, key: str, convert: Any = str, requested: str | None = None
                ) -> None:
        """A field taken straight from a `key=value` of the engine config line; without
        one, from the non-default args' `requested` key, for settings the engine runs
        as requested or refuses to start."""
        raw, ev = self.log.setting(key)
        if ev is None and requested and self.log.arg(requested)[1] is not None:
            value, args_ev = self.log.arg(requested)
            self.put(name, convert_value(value, convert), f"non-default args {requested} (no "
                     f"{key} in an engine config line; the engine runs it or refuses)", args_ev)
            return
        rule = f"engine config line {key}" if ev else f"no {key} in an engine config line"
        self.put(name, convert_value(raw, convert), rule, ev)

    def engine(self) -> None:
        cfg, banner = self.log.config_fact, self.log.first(Kind.banner)
        fact = cfg or banner or self.log.first(Kind.server_version)
        self.put("engine.name", "vllm" if fact else None, "vLLM banner and config line",
                 self.log.evidence(fact) if fact else None)
        version = fact.values.get("version") if fact else None
        source_build = version is not None and (".dev" in version or "+g" in version)
        self.put("engine.version", version, "version banner (self-reported)",
                 self.log.evidence(fact, f"v{version}") if fact else None, self_reported=True,
                 note="a source build's banner is self-reported and may be stale: the engine's "
                      "identity is its source tree commit" if source_build else None)
        if self.declared.get("engine.commit"):
            self.put("engine.commit", None, "not in the log: a banner's +g<hash> is not proof of "
                     "the tree; the source tree's commit is recorded at seal")

    def model(self) -> None:
        path, ev = self.log.setting("model")
        declared = self.declared.get("model.path")
        self.out["model.path"] = make(declared, path, "engine config line model", [ev],
                                      status=_path_status(declared, path))
        self.setting("model.revision", "revision")
        archs = self.log.all(Kind.architecture)
        self.put("model.architecture", archs[0].values["arch"] if archs else None,
                 "first `Resolved architecture` line",
                 self.log.evidence(archs[0]) if archs else None)
        if self.log.speculative.get("model"):
            draft = archs[1] if len(archs) > 1 else None
            self.put("draft.architecture", draft.values["arch"] if draft else None,
                     "second `Resolved architecture` line",
                     self.log.evidence(draft) if draft else None)
            spec_args, ev = self.log.arg("speculative_config")
            revision = spec_args.get("revision") if isinstance(spec_args, dict) else None
            self.put("draft.revision", revision, "non-default args speculative_config.revision",
                     ev if revision else None)

    def speculative(self) -> None:
        raw, ev = self.log.setting("speculative_config")
        if raw is None and ev is None:
            self.put("spec.method", None, "no engine config line")
            return
        spec = self.log.speculative
        method = spec.get("method") if raw else "none"
        self.put("spec.method", method, "engine config line speculative_config", ev)
        if raw:
            self.put("spec.num_tokens", convert_value(spec.get("num_spec_tokens"), int),
                     "engine config line speculative_config.num_spec_tokens", ev)

    def parallel(self) -> None:
        for axis in ("tensor", "pipeline", "data"):
            self.setting(f"parallel.{axis}", f"{axis}_parallel_size", int,
                         requested=f"{axis}_parallel_size")
        ep = self.log.first(Kind.expert_parallel)
        layout = self.log.first(Kind.rank_layout)
        enabled, args_ev = self.log.arg("enable_expert_parallel")
        if ep:
            self.put("parallel.expert", int(ep.values["size"]), "expert-parallel log line",
                     self.log.evidence(ep))
        elif layout and "EP rank N/A" in layout.values.get("layout", ""):
            self.put("parallel.expert", 1, "rank layout: EP rank N/A", self.log.evidence(layout))
        elif self.log.config_fact and not enabled:
            self.put("parallel.expert", 1, "enable_expert_parallel not among the non-default args",
                     self.log.evidence(self.log.args_fact) if self.log.args_fact else None)
        else:
            self.put("parallel.expert", None, "no expert-parallel line", args_ev)

    def graph(self) -> None:
        mode, ev = self.log.compilation("mode")
        self.put("graph.compilation_mode", mode, "engine config line compilation_config.mode", ev)
        self._cudagraph_mode()
        sizes, ev = self.log.compilation("cudagraph_capture_sizes")
        self.put("graph.capture_sizes", _int_list(sizes), "engine config line "
                 "compilation_config.cudagraph_capture_sizes", ev)

    def _cudagraph_mode(self) -> None:
        mode, ev = self.log.compilation("cudagraph_mode")
        rule, evs = "engine config line compilation_config.cudagraph_mode", [ev]
        for change in self.log.all(Kind.cudagraph_change):
            mode, rule = change.values["mode"], "a startup warning changed the requested mode"
            evs.append(self.log.evidence(change))
        capture = self.log.first(Kind.graph_capture)
        if capture and mode and mode in capture.values.get("what", ""):
            evs.append(self.log.evidence(capture))
            rule += "; graphs captured in that mode"
        self.put("graph.cudagraph_mode", mode, rule, *evs)

    def attention(self) -> None:
        facts = self.log.all(Kind.attention)
        named = next((f for f in facts if f.values.get("name") or f.values.get("cpu")), None)
        xpu = next((f for f in facts if f.values.get("xpu")), None)
        fa = next((f for f in facts if f.values.get("fa")), None)
        device, device_ev = self.log.setting("device_config")
        if named:
            value = named.values.get("name") or named.values["cpu"]
            self.put("attention.backend", value, "attention backend log line",
                     self.log.evidence(named))
        elif xpu:
            self.put("attention.backend", "FLASH_ATTN", "XPU `Using Flash Attention backend.`",
                     self.log.evidence(xpu), self.log.evidence(fa) if fa else None,
                     note=f"FlashAttention version {fa.values['fa']}" if fa else None)
        elif device == "cpu":
            self.put("attention.backend", "CPU_ATTN", "vLLM 0.32 CPU platform: CPU_ATTN serves "
                     "every non-MLA model (it logs no backend line)", device_ev)
        else:
            self.put("attention.backend", None, "no attention backend line")


def convert_value(raw: Any, convert: Any) -> Any:
    """A config-line value as `convert` (str drops `torch.`; bool is `True`); None stays."""
    if raw is None:
        return None
    if convert is bool:
        return str(raw) == "True"
    if convert is str:
        return str(raw).removeprefix("torch.")
    try:
        return convert(raw)
    except (TypeError, ValueError):
        return None


def _int_list(raw: str | None) -> list[int] | None:
    if raw is None:
        return None
    return [int(x) for x in re.findall(r"\d+", raw)]


# what an unset `${VAR}` of a recipe path may stand for: path-safe text only, so a logged
# model path holding ESC, OSC, quotes or `=HYPERLINK(...)` is a mismatch, never confirmed
PATH_SAFE = r"[A-Za-z0-9._+@%,:~/-]+"


def _path_status(declared: str | None, resolved: str | None) -> Status:
    """Compare a recipe path that may hold an unset `${VAR}` as a wildcard of path-safe
    characters."""
    if resolved is None or declared is None:
        return status_for(declared, resolved)
    pattern = "".join(PATH_SAFE if part.startswith("${") else re.escape(part)
                      for part in re.split(r"(\$\{\w+\})", os.path.expandvars(declared)))
    return Status.confirmed if re.fullmatch(pattern, resolved) else Status.mismatch
