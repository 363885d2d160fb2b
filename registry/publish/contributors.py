"""Contributors and their credit, derived from evidence (the lab's
`CONTRIBUTOR_STATUSES`): each step needs the one before it and its own proof.

- `acknowledged`: an intake entry;
- `credited`: the right to submit confirmed and a license named;
- `validated-boost`: an A/B verification in this ledger, named as evidence, whose boost
  was decided faster (its interval above zero), like for like;
- `integrated`: the contribution's patch (by sha256) is one of the package's patches.

The contributor file states a status; the package carries the derived one beside it,
with the reason it stops where it does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from registry.base.safeload import loads_toml
from registry.errors import InvalidInput
from registry.publish.package import Contributor, Intake, Provenance
from registry.store.home import Home

STATUSES = ("acknowledged", "credited", "validated-boost", "integrated")


def contributors_of(home: Home, path: Path, patches: Sequence[str]) -> list[Contributor]:
    """The contributors declared in `path` (TOML, `[[contributor]]`), each with its status
    derived; `patches` are the sha256 of the package's patches."""
    try:
        raw = loads_toml(path.read_bytes())
    except OSError as e:
        raise InvalidInput(f"{path}: {e.strerror or 'cannot read'}") from None
    except ValueError as e:
        raise InvalidInput(f"{path}: not a TOML file ({e})") from None
    entries = raw.get("contributor", [])
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: `contributor` must be an array of tables ([[contributor]])")
    return [_derived(home, _parsed(path, i, e), patches) for i, e in enumerate(entries)]


def _parsed(path: Path, index: int, entry: Any) -> Contributor:
    if not isinstance(entry, dict):
        raise InvalidInput(f"{path}: contributor {index} is not a table")
    stated = entry.get("status")
    try:
        return Contributor(
            id=entry.get("id", ""), kind=entry.get("kind", ""), profile=entry.get("profile"),
            contribution=entry.get("contribution", ""), status="acknowledged",
            stated_status=stated, evidence=entry.get("evidence", []),
            intake=Intake.model_validate(entry.get("intake", {})),
            provenance=Provenance.model_validate(entry.get("provenance", {})))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(f"{path}: contributor {index}: {where}: {first['msg']}") from None


def _derived(home: Home, c: Contributor, patches: Sequence[str]) -> Contributor:
    if c.kind not in ("lab", "external") or not c.id:
        raise InvalidInput(f"contributor {c.id!r}: needs an id and a kind (lab or external)")
    if c.stated_status is not None and c.stated_status not in STATUSES:
        raise InvalidInput(f"contributor {c.id}: status {c.stated_status!r} is not one of "
                           f"{', '.join(STATUSES)}")
    status, reason, effect = "acknowledged", "intake recorded", None
    if not (c.intake.right_to_submit and c.intake.license):
        reason = "the right to submit is not confirmed, or no license is named"
    else:
        status, reason = "credited", "rights confirmed, license " + c.intake.license
        effect = _boost(home, c.evidence)
        if effect is None:
            reason += "; no decided faster A/B among its evidence"
        else:
            status, reason = "validated-boost", f"A/B: {effect}"
            if c.intake.patch_sha256 and c.intake.patch_sha256 in patches:
                status, reason = "integrated", reason + "; its patch is in this package"
            else:
                reason += "; its patch is not among this package's patches"
    if c.stated_status and STATUSES.index(c.stated_status) > STATUSES.index(status):
        reason = f"stated {c.stated_status}, evidence reaches {status}: {reason}"
    return c.model_copy(update={"status": status, "reason": reason,
                                "validated_effect": effect})


def _boost(home: Home, evidence: Sequence[str]) -> str | None:
    """The first decided, faster boost among the A/B verifications named as evidence."""
    from registry.store.verifications import all_verifications

    stored, _ = all_verifications(home)
    for ref in evidence:
        for v in stored:
            p = v.statement.predicate
            if not v.id.startswith(ref) or p.policy.name != "ab":
                continue
            for check in p.checks:
                boost = next((f for f in check.figures if f.metric.endswith("/boost_pct")), None)
                if check.result.value == "PASSED" and boost and boost.low is not None \
                        and boost.low > 0:
                    return (f"{boost.metric} {boost.value:+.2f}% [{boost.low:+.2f}, "
                            f"{boost.high:+.2f}] (verification {v.id[:16]})")
    return None
