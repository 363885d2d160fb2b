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
from registry.formats.display import short_id
from registry.publish.package import Contributor, Intake, Provenance
from registry.store.home import Home

STATUSES = ("acknowledged", "credited", "validated-boost", "integrated")


def contributors_of(home: Home, path: Path, patches: Sequence[str]) -> list[Contributor]:
    """The contributors declared in `path` (TOML, `[[contributor]]`), each with its status
    derived; `patches` are the sha256 of the package's patches."""
    return [_derived(home, c, patches) for c, _ in parse_file(path)]


def parse_file(path: Path) -> list[tuple[Contributor, str | None]]:
    """Each `[[contributor]]` of `path`, with the record it names as `included_in`."""
    try:
        raw = loads_toml(path.read_bytes())
    except OSError as e:
        raise InvalidInput(f"{path}: {e.strerror or 'cannot read'}") from None
    except ValueError as e:
        raise InvalidInput(f"{path}: not a TOML file ({e})") from None
    entries = raw.get("contributor", [])
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: `contributor` must be an array of tables ([[contributor]])")
    out = []
    for i, entry in enumerate(entries):
        contributor = _parsed(path, i, entry)
        included = entry.get("included_in")
        if included is not None and not isinstance(included, str):
            raise InvalidInput(f"{path}: contributor {i}: included_in must be a record id")
        out.append((contributor, included))
    return out


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
    check_identity(c)
    status, reason, effect = derive(home, c.intake, c.evidence, patches)
    if c.stated_status and STATUSES.index(c.stated_status) > STATUSES.index(status):
        reason = f"stated {c.stated_status}, evidence reaches {status}: {reason}"
    return c.model_copy(update={"status": status, "reason": reason,
                                "validated_effect": effect})


def check_identity(c: Contributor) -> None:
    """An id, a kind, and a stated status that is one of the lab's, else refused."""
    if c.kind not in ("lab", "external") or not c.id:
        raise InvalidInput(f"contributor {c.id!r}: needs an id and a kind (lab or external)")
    if c.stated_status is not None and c.stated_status not in STATUSES:
        raise InvalidInput(f"contributor {c.id}: status {c.stated_status!r} is not one of "
                           f"{', '.join(STATUSES)}")


def derive(home: Home, intake: Intake, evidence: Sequence[str], patches: Sequence[str]
           ) -> tuple[str, str, str | None]:
    """(status, why it stops there, the validated effect): as far as the evidence
    reaches, each step needing the one before it. `patches`: sha256 of the patches the
    contribution must be among to be `integrated`."""
    if not (intake.right_to_submit and intake.license):
        return "acknowledged", "the right to submit is not confirmed, or no license is named", \
            None
    reason = "rights confirmed, license " + intake.license
    effect, why_not = boost(home, evidence)
    if effect is None:
        return "credited", f"{reason}; {why_not}", None
    if intake.patch_sha256 and intake.patch_sha256 in patches:
        return "integrated", f"A/B: {effect}; its patch is included", effect
    return "validated-boost", f"A/B: {effect}; its patch is not among the included patches", \
        effect


def boost(home: Home, evidence: Sequence[str]) -> tuple[str | None, str]:
    """The first decided, faster boost among the A/B verifications named as evidence
    (ids or prefixes this ledger holds), else None and why not."""
    from registry.store.verifications import all_verifications

    stored, _ = all_verifications(home)
    why = ["no A/B verification named as evidence"] if not evidence else []
    for ref in evidence:
        found = [v for v in stored if v.id.startswith(ref) and ref]
        abs_ = [v for v in found if v.statement.predicate.policy.name == "ab"]
        if not found:
            why.append(f"{short_id(ref)}: no verification of this ledger")
        elif not abs_:
            why.append(f"{short_id(ref)}: not an A/B verification")
        for v in abs_:
            for check in v.statement.predicate.checks:
                b = next((f for f in check.figures if f.metric.endswith("/boost_pct")), None)
                if check.result.value == "PASSED" and b and b.low is not None and b.low > 0:
                    return (f"{b.metric} {b.value:+.2f}% [{b.low:+.2f}, {b.high:+.2f}] "
                            f"(verification {short_id(v.id)})"), ""
            why.append(f"{short_id(v.id)}: no boost decided faster (its interval above zero)")
    return None, "; ".join(why)
