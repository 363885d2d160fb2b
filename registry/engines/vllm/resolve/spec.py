"""Speculative decoding acceptance: `/metrics` counter differences, else the log.

The counters are totals over the suite (after - before); the log's `SpecDecoding
metrics` lines are per-interval values, summed. Acceptance rate = accepted / draft
tokens; emitted tokens per draft cycle = (accepted + drafts) / drafts (the bonus
token of each cycle is emitted too).

The log's lines are kept apart by phase (`SpecPhase`): when the first engine's lines
hold two or more `/metrics` scrapes (a harness's before/after snapshots), the figures
are the lines between the first and the last, as the counters would be; after a
restart, only the first engine's lines count. Each phase is listed in the notes.
"""

from __future__ import annotations

from registry.engines.vllm.logs.scan import MAX_PHASES
from registry.formats.identity import SpecDecodeStats
from registry.logs import SpecLogTotals, SpecPhase
from registry.logs.prometheus import Scrape, counter_diff

PREFIX = "vllm:spec_decode_"


def spec_stats(before: Scrape | None, after: Scrape | None, log: SpecLogTotals | None,
               phases: list[SpecPhase], num_spec_tokens: int | None) -> SpecDecodeStats | None:
    return _from_metrics(before, after) or _from_log(log, phases, num_spec_tokens)


def phase_notes(phases: list[SpecPhase]) -> list[str]:
    """One line per phase with interval lines, when there is more than one."""
    kept = [p for p in phases if p.lines]
    if len(kept) < 2:
        return []
    return ["speculative decoding by phase (log): " + "; ".join(
        f"{_label(p)}: {p.accepted}/{p.drafted} accepted"
        f"{f' ({p.accepted / p.drafted:.4f})' if p.drafted else ''} in {p.lines} line(s)"
        for p in kept)]


def _label(phase: SpecPhase) -> str:
    fact = phase.opened_by
    if fact is None:
        return "from the start"
    what = "/metrics scrape" if fact.kind == "metrics_scrape" else "engine restart"
    return f"after the {what} at line {fact.line}"


def _window(phases: list[SpecPhase]) -> tuple[list[SpecPhase], str]:
    """The phases the log's figures come from, and how they were chosen."""
    first = next((i for i, p in enumerate(phases) if p.opened_by is not None
                  and p.opened_by.kind == "restart"), len(phases))
    engine = phases[:first]
    scrapes = [i for i, p in enumerate(engine) if p.opened_by is not None]
    lines = [p.opened_by.line for p in engine if p.opened_by is not None]
    if len(scrapes) >= 2 and len(phases) < MAX_PHASES:
        return (engine[scrapes[0]:scrapes[-1]],
                f"between the /metrics scrapes at lines {lines[0]} and {lines[-1]}")
    if first < len(phases):
        return engine, "the first engine's, before its restart"
    return phases, ""


def _from_metrics(before: Scrape | None, after: Scrape | None) -> SpecDecodeStats | None:
    if after is None:
        return None
    drafts = counter_diff(before, after, PREFIX + "num_drafts_total")
    tokens = counter_diff(before, after, PREFIX + "num_draft_tokens_total")
    accepted = counter_diff(before, after, PREFIX + "num_accepted_tokens_total")
    if not tokens or drafts is None or accepted is None:
        return None
    name = PREFIX + "num_accepted_tokens_per_pos_total"
    positions = sorted({int(s.labels.get("position", -1)) for s in after.find(name)})
    per_position = [int(counter_diff(before, after, name, position=str(p)) or 0)
                    for p in positions if p >= 0]
    return _stats("metrics", int(drafts), int(tokens), int(accepted), per_position)


def _from_log(log: SpecLogTotals | None, phases: list[SpecPhase], num_spec_tokens: int | None
              ) -> SpecDecodeStats | None:
    if log is None or not log.drafted:
        return None
    window, how = _window(phases)
    lines, accepted, drafted = (sum(p.lines for p in window), sum(p.accepted for p in window),
                                sum(p.drafted for p in window))
    if not drafted:  # nothing in the window: every line, said so
        lines, accepted, drafted = log.lines, log.accepted, log.drafted
        how = f"every line (none {how})" if how else ""
    drafts = None
    source = f"log ({lines} SpecDecoding lines summed{f', {how}' if how else ''})"
    if num_spec_tokens and drafted % num_spec_tokens == 0:
        drafts = drafted // num_spec_tokens
        source += f"; drafts = drafted / {num_spec_tokens}"
    return _stats(source, drafts, drafted, accepted, [])


def _stats(source: str, drafts: int | None, tokens: int, accepted: int,
           per_position: list[int]) -> SpecDecodeStats:
    return SpecDecodeStats(
        source=source, drafts=drafts, draft_tokens=tokens, accepted_tokens=accepted,
        per_position_accepted=per_position, acceptance_rate=accepted / tokens,
        emitted_per_cycle=(accepted + drafts) / drafts if drafts else None,
    )
