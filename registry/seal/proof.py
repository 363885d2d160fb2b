"""What a run's evidence proves: a failed run, and evidence that proves nothing.

Seal asks two questions of the raw evidence, never of `status.json` alone (a
status file is easily deleted or edited):

- **Did the run fail?** A row with an error, benchmark rows none of which completed,
  or an engine that raised and never reported serving. A failed run is refused.
- **Does the evidence prove anything?** A log with no engine start (no vLLM banner
  or engine config line: random bytes, another program's output, an empty file) or
  an identity whose every field is unresolved proves nothing about what ran. Such a
  run is refused unless the sealer says why it should be kept (`--allow-unproven
  REASON`); the record then carries an `Unproven` mark that every view shows.

The mark itself, and how views re-derive it, is registry.formats.unproven.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.errors import InvalidInput, Refused
from registry.formats.identity import ResolvedIdentity
from registry.formats.rundir import SERVER_LOG
from registry.formats.unproven import Unproven, gaps

if TYPE_CHECKING:
    from registry.formats.rundir import Bench
    from registry.logs import LogScan


def failure(scan: LogScan, bench: Bench | None) -> str | None:
    """Why the raw evidence says the run failed, or None."""
    rows = bench.rows if bench else []
    bad = [r for r in rows if r.error]
    if bad:
        return (f"{len(bad)} of {len(rows)} requests failed; first: {bad[0].prompt_id}: "
                f"{bad[0].error}")
    completed = [r for r in rows if r.token_ids or r.completion_tokens]
    if bench is not None and not completed:
        return "bench.json holds no completed request"
    if scan.exceptions and scan.first("ready") is None and not completed:
        last = scan.exceptions[-1]
        return (f"the engine raised and never reported serving: {SERVER_LOG}:{last.line}: "
                f"{last.text}")
    return None


def require_proof(identity: ResolvedIdentity, scan: LogScan, bench: Bench | None,
                  allow_unproven: str | None) -> Unproven | None:
    """Refuse a failed run; refuse evidence that proves nothing unless a reason is given.
    Returns the mark the record carries (None for a run that proves what it claims)."""
    why = failure(scan, bench)
    if why:
        raise Refused(f"the run failed: {why}",
                      hint="only a complete run is sealed; fix the cause and run it again")
    found = gaps(identity)
    if allow_unproven is not None and not allow_unproven.strip():
        raise InvalidInput("--allow-unproven needs a reason",
                           hint="--allow-unproven 'why this record is worth keeping'")
    if not found:
        if allow_unproven is not None:
            raise InvalidInput("--allow-unproven: this run's evidence proves its identity",
                               hint="seal it without --allow-unproven")
        return None
    if allow_unproven is None:
        raise Refused(f"the evidence proves nothing: {'; '.join(found)}",
                      hint="seal a real engine log, or keep it anyway, marked unproven: "
                           "--allow-unproven REASON")
    return Unproven(reason=allow_unproven.strip(), gaps=found)
