"""Speculative decoding acceptance: `/metrics` counter differences, else the log.

The counters are totals over the suite (after - before); the log's `SpecDecoding
metrics` lines are per-interval values, summed. Acceptance rate = accepted / draft
tokens; emitted tokens per draft cycle = (accepted + drafts) / drafts (the bonus
token of each cycle is emitted too).
"""

from __future__ import annotations

from registry.identity import SpecDecodeStats
from registry.logs import SpecLogTotals
from registry.logs.prometheus import Scrape, counter_diff

PREFIX = "vllm:spec_decode_"


def spec_stats(before: Scrape | None, after: Scrape | None, log: SpecLogTotals | None,
               num_spec_tokens: int | None) -> SpecDecodeStats | None:
    return _from_metrics(before, after) or _from_log(log, num_spec_tokens)


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


def _from_log(log: SpecLogTotals | None, num_spec_tokens: int | None) -> SpecDecodeStats | None:
    if log is None or not log.drafted:
        return None
    drafts = None
    source = f"log ({log.lines} SpecDecoding lines summed)"
    if num_spec_tokens and log.drafted % num_spec_tokens == 0:
        drafts = log.drafted // num_spec_tokens
        source += f"; drafts = drafted / {num_spec_tokens}"
    return _stats(source, drafts, log.drafted, log.accepted, [])


def _stats(source: str, drafts: int | None, tokens: int, accepted: int,
           per_position: list[int]) -> SpecDecodeStats:
    return SpecDecodeStats(
        source=source, drafts=drafts, draft_tokens=tokens, accepted_tokens=accepted,
        per_position_accepted=per_position, acceptance_rate=accepted / tokens,
        emitted_per_cycle=(accepted + drafts) / drafts if drafts else None,
    )
