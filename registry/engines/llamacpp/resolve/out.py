"""The fields a llama.cpp resolution writes: each resolved value with the log lines that
prove it, the declared value beside it and the status the two give."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from registry.formats.identity import Evidence, ResolvedField, Status, status_for
from registry.logs.facts import Fact


@dataclass
class Out:
    source: str  # the log's name within the run directory
    declared: dict[str, Any]
    fields: dict[str, ResolvedField] = field(default_factory=dict)

    def evidence(self, fact: Fact) -> Evidence:
        return Evidence(source=self.source, line=fact.line, text=fact.text)

    def put(self, name: str, value: Any, rule: str, facts: list[Fact | None] | None = None, *,
            note: str | None = None, self_reported: bool = False) -> None:
        declared = self.declared.get(name)
        self.fields[name] = ResolvedField(
            declared=declared, resolved=value, rule=rule, note=note,
            status=status_for(declared, value) if value is not None or declared is None
            else Status.unresolved,
            evidence=[self.evidence(f) for f in facts or [] if f is not None],
            self_reported=self_reported)
