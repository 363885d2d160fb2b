"""Evidence levels, derived from the ledger, never typed in: `community-reported`,
`<hardware>-tested`, `<hardware>-verified`, `invalid`, `superseded`, each with its reason.

For a claim: `invalid` when refuted; `superseded` when stale (what moved); else, over
the records linked to it (sealed from its evidence, or judged by the verifications its
events rest on): `<hardware>-verified` when a record signed by a lab key matches the
claim on what ran (model, quantization, runtime, topology) and a PASSED reproduction
judged it (its contract re-derived and passed); `<hardware>-tested` when such a record
exists without that; `community-reported` otherwise. For a record: the same, with the
record's own device as the hardware.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.base.model import Frozen
from registry.claims.lifecycle import WHAT_RAN
from registry.claims.match import confirms, match
from registry.claims.models import ClaimBody, State
from registry.formats.display import short_id
from registry.formats.verification import Result
from registry.store.home import Home

if TYPE_CHECKING:
    from registry.claims.events import Replayed
    from registry.formats.record import Statement
    from registry.store.verifications import StoredVerification


class Level(Frozen):
    level: str
    reason: str


def claim_level(home: Home, replayed: Replayed) -> Level:
    from registry.store.verifications import all_verifications

    last = replayed.events[-1].decision if len(replayed.events) > 1 else None
    lab = replayed.claim.lab
    stated = f"as the lab's file states ({lab.path})" if lab else "as first stated"
    if replayed.state is State.refuted:
        return Level(level="invalid", reason=last.reason if last else f"refuted, {stated}")
    if replayed.state is State.stale:
        return Level(level="superseded", reason=last.reason if last else f"stale, {stated}")
    verifications, _ = all_verifications(home)
    linked = list(replayed.claim.records)
    named = {e.event.verification for e in replayed.events if e.event.verification}
    linked += [rid for v in verifications if v.id in named for rid in v.statement.judged()]
    hardware = replayed.claim.identity.hardware
    return _level(home, replayed.claim, list(dict.fromkeys(linked)), hardware, verifications)


def _level(home: Home, claim: ClaimBody, linked: list[str], hardware: str | None,
           verifications: list[StoredVerification]) -> Level:
    from registry.claims.labkeys import lab_keys
    from registry.store.query import checked_statement

    keys = lab_keys(home)
    tested: list[str] = []
    lab_runs = 0
    for rid in linked:
        rid, check, data = checked_statement(home, rid)
        if not check.ok or check.signer not in keys:
            continue
        lab_runs += 1
        if _ran_as_claimed(claim, _parse(data)):
            tested.append(rid)
    if not tested:
        why = ("no run signed by a lab key" if not lab_runs else
               f"{lab_runs} lab run(s), none matching the claim on {', '.join(WHAT_RAN)}")
        return Level(level="community-reported", reason=why)
    label = hardware or "matching-hardware"
    for rid in tested:
        if reproduced := _reproduced(rid, verifications):
            return Level(level=f"{label}-verified",
                         reason=f"lab record {short_id(rid)} matches the claim and reproduction "
                                f"{short_id(reproduced)} passed (identity, contract, performance)")
    return Level(level=f"{label}-tested",
                 reason=f"lab record {short_id(tested[0])} matches the claim on what ran; no "
                        "passed reproduction of it yet")


def record_level(home: Home, rid: str, statement: Statement, signer: str | None) -> Level:
    """A record's own level: lab-signed or not, on its own device, reproduced or not."""
    from registry.claims.labkeys import lab_keys
    from registry.store.verifications import all_verifications

    if signer is None or signer not in lab_keys(home):
        return Level(level="community-reported",
                     reason="not signed by a key this home trusts as the lab's")
    host = statement.predicate.environment.host_facts()
    names = [a.get("name", "") for a in host.get("accelerators") or []]
    identity = statement.predicate.identity  # an imported log names its device itself
    device = names[0] if names else (identity.value("runtime.device")
                                     or identity.value("platform.device"))
    label = str(device or "unknown-hardware")
    reproduced = _reproduced(rid, all_verifications(home)[0])
    if reproduced:
        return Level(level=f"{label}-verified",
                     reason=f"signed by a lab key; reproduction {short_id(reproduced)} passed")
    return Level(level=f"{label}-tested", reason="signed by a lab key; not reproduced yet")


def _ran_as_claimed(claim: ClaimBody, record: Statement) -> bool:
    axes = match(claim.identity, claim.claimed.metric, record, contract_passed=None)
    return confirms([a for a in axes if a.axis in WHAT_RAN])


def _reproduced(rid: str, verifications: list[StoredVerification]) -> str | None:
    """A PASSED reproduction that judged `rid` (whose contract check passed with it)."""
    for v in verifications:
        p = v.statement.predicate
        if p.policy.name == "reproduce" and p.result is Result.passed and \
                rid in v.statement.judged():
            return v.id
    return None


def _parse(data: bytes) -> Statement:
    from registry.formats.record import parse_statement

    return parse_statement(data)
