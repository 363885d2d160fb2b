"""Evidence that proves nothing about what ran, and the mark every view shows for it.

Views re-derive the gaps from the sealed identity (`gaps`), so a record is marked even
when it was sealed without the mark (by an older registry, or imported). The seal
policy that refuses such evidence is registry.seal.proof.
"""

from pydantic import Field

from registry.base.model import Frozen
from registry.formats.identity import Kind, ResolvedIdentity, Status, kind_of
from registry.formats.runfacts import SERVER_LOG


class Unproven(Frozen):
    """The mark of a record sealed although its evidence proves nothing."""

    reason: str = Field(description="why the sealer kept it (--allow-unproven REASON)")
    gaps: list[str] = Field(description="what the evidence failed to prove")


def gaps(identity: ResolvedIdentity) -> list[str]:
    """Why this identity proves nothing about what ran; empty when it proves something."""
    out = []
    if identity.value("engine.name") is None:
        out.append(f"{SERVER_LOG} shows no engine start (no vLLM banner or engine config line)")
    if all(f.status is Status.unresolved for name, f in identity.fields.items()
           if kind_of(name) is Kind.identity):
        out.append("every identity field is unresolved")
    return out


def mark(unproven: Unproven | None, identity: ResolvedIdentity) -> str | None:
    """The warning a view shows for a record (or run), or None when it proves something."""
    found = gaps(identity) or (unproven.gaps if unproven else [])
    if not found:
        return None
    reason = f" (sealed anyway: {unproven.reason})" if unproven else ""
    return f"UNPROVEN{reason}: {'; '.join(found)}"
