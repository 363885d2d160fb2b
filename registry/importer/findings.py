"""What a reader of an imported record must see (kept light: `show` reads it)."""

from __future__ import annotations

from registry.formats.display import against
from registry.formats.identity import Status
from registry.formats.record import Predicate


def findings(p: Predicate) -> list[str]:
    """What a reader must see: published figures the rows do not give, declared values
    the engine contradicts, a failed run."""
    out = [f"published {f.metric} {f.aggregation} {f.value!r} ({f.source}: {f.key}); the rows "
           f"give {f.rederived!r} = {f.aggregation} of {f.formula} over {f.rows} rows"
           for f in p.published if f.agrees is False]
    by = p.imported.declared_by if p.imported else {}
    out += [f"{name}: " + against(f.declared, by.get(name), f.resolved,
                                  f"{f.evidence[0].source}:{f.evidence[0].line}"
                                  if f.evidence and f.evidence[0].line else
                                  f.evidence[0].source if f.evidence else None)
            for name, f in p.identity.fields.items() if f.status is Status.mismatch]
    if p.run.state == "failed":
        out.append(f"failed run: {p.run.reason}")
    return out
