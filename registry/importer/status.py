"""A run's outcome as the lab stated it, and whether its engine ever became ready.

An import is `failed` when a lab file says so (a non-zero exit code, an `error`, an
`unqualified` decision, a failed gate in a summary, a failing verdict) or when the
engine log stops before the server was ready (a harness log that shows the server
healthy, or answering completions, was ready); the lab's own words are the reason.
Otherwise the state stays `unknown`: a capsule's claim of success is not a registry
observation.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from registry.engines.vllm.logs import scan_log
from registry.engines.vllm.logs.messages import Kind
from registry.importer.walk import load_json

FAILED_WORDS = {"failed", "fail", "unqualified", "refuted", "error", "crashed", "rejected"}


def lab_outcome(capsule: Path, status_files: list[str], summaries: list[str],
                log: str | None, missing: list[str]) -> tuple[str, str | None]:
    """(state, reason): `failed` with the lab's stated reason, else `unknown`."""
    reasons = [r for name in [*status_files, *summaries] if (r := _failure(capsule, name))]
    if log is not None and (r := _never_ready(capsule, log)):
        reasons.append(r)
    if reasons:
        return "failed", "; ".join(reasons)[:1000]
    absent = [m for m in missing if PurePosixPath(m).name.startswith("status.")]
    if absent:
        return "unknown", f"{absent[0]} is listed in the manifest but absent"
    said = [f"{n}: {_text(capsule / n)[:120]}" for n in status_files
            if n.endswith((".txt", "exit-code"))]
    return "unknown", ("lab status: " + "; ".join(said)) if said else None


def _failure(capsule: Path, name: str) -> str | None:
    path = capsule / name
    if name.endswith("exit-code"):
        code = _text(path)
        return None if code == "0" else f"{name}: exit code {code[:40]}"
    if name.endswith(".txt"):
        text = _text(path)
        return f"{name}: {text[:200]}" if set(text.lower().split()) & FAILED_WORDS else None
    data = load_json(path)
    return _json_failure(name, data) if isinstance(data, dict) else None


def _json_failure(name: str, data: dict[str, Any]) -> str | None:
    if isinstance(data.get("error"), str) and data["error"]:
        return f"{name}: error: {data['error'][:200]}"
    for key in ("status", "verdict", "state"):
        value = data.get(key)
        if isinstance(value, str) and value.lower() in FAILED_WORDS:
            return f"{name}: {key} {value}" + _failed_checks(data)
    gates = data.get("status")
    if isinstance(gates, dict):
        failed = sorted(f"{k} false" for k, v in gates.items() if v is False and _is_gate(k))
        failed += sorted(f"{k} {v}" for k, v in gates.items()
                         if k.endswith("_rc") and isinstance(v, int) and v != 0)
        if failed:
            return f"{name}: status {', '.join(failed)}"
    return None


def _is_gate(key: str) -> bool:
    """A pass/fail flag (`quality_pass_all`, `fresh_response_valid`), not a `*_skipped`."""
    return any(word in key for word in ("pass", "valid", "match", "ok")) and "skip" not in key


def _failed_checks(data: dict[str, Any]) -> str:
    checks = [c for key in ("pilot_checks", "checks", "gates") if isinstance(data.get(key), list)
              for c in data[key] if isinstance(c, dict) and c.get("passed") is False]
    if not checks:
        return ""
    named = ", ".join(f"{c.get('id', '?')} ({c.get('reason', 'failed')})" for c in checks[:5])
    return f" (failed: {named})"


# A lab harness log says the server came up in its own words, or shows it serving.
SERVED = re.compile(r"server healthy after|\"POST /v1/(?:chat/)?completions HTTP/1\.[01]\" 200")


def _never_ready(capsule: Path, log: str) -> str | None:
    scan = scan_log(capsule / log)
    if scan.empty or scan.first(Kind.ready) is not None or _served(capsule / log):
        return None
    last = scan.facts[-1] if scan.facts else None
    where = f"; last startup line {last.line}: {last.text[:120]}" if last else ""
    raised = f"; the engine raised: {scan.exceptions[-1].text[:200]}" if scan.exceptions else ""
    return f"{log}: the engine never reported ready ({scan.lines:,} lines){where}{raised}"


def _served(path: Path) -> bool:
    """The log shows the server healthy or answering (a harness log whose engine lines
    are only a tail): it did become ready."""
    try:
        with path.open("rb") as f:
            return any(SERVED.search(line.decode(errors="replace")) for line in f)
    except OSError:
        return False


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""

