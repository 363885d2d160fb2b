"""`registry review RECORD`: everything a maintainer checks before accepting a
contributed record, in one report and one verdict.

Each part is re-derived, never read back from what the record says about itself:
the signature and trust (registry/signing/signed.py); the identity re-resolved from the
record's own sealed evidence (registry/review/reresolve.py); the figures re-derived from the
raw rows and compared with the signed ones, and with the lab's published figures when
the record carries them; the quality contract judged again on the rows; the
environment facts; the measurement's own quality (rows, errors; a degraded headline
needs evidence, never a silent accept). Verdict: `reject`
when anything is wrong (exit 1), else `needs evidence` when something could not be
checked (exit 3), else `accept` (exit 0).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from pydantic import Field

from registry.base.model import Frozen
from registry.claims.levels import Level
from registry.errors import ExitCode, RegistryError
from registry.formats import rundir
from registry.formats.record import Statement
from registry.store.home import Home

TOLERANCE = 1e-9  # relative: figures re-derived from the same rows agree to rounding


class Status(StrEnum):
    ok = "ok"
    reject = "reject"
    needs_evidence = "needs evidence"
    note = "note"


class Decision(StrEnum):
    """What a review concludes (not a contract's Verdict, nor a reproduction's judgements)."""

    accept = "accept"
    reject = "reject"
    needs_evidence = "needs evidence"


class Finding(Frozen):
    part: str  # signature | identity | figures | published | contract | environment | ...
    status: Status
    detail: str


class Review(Frozen):
    id: str
    verdict: Decision
    findings: list[Finding]
    evidence_level: Level | None = Field(None, description="derived: the level and why")
    verification: str | None = Field(None, description="the signed attestation of the verdict")
    not_sealed: str | None = Field(None, description="why the verdict was not sealed")


def review_record(home: Home, prefix: str, *, seal: bool = True) -> Review:
    """Review a record; with `seal`, sign the verdict as a verification attestation
    (when this home's key may sign; otherwise `not_sealed` says why)."""
    from registry.formats.record import parse_statement
    from registry.store.query import checked_statement

    rid, check, data = checked_statement(home, prefix)
    if not check.ok:
        finding = Finding(part="signature", status=Status.reject,
                          detail=f"{check.trust.value}: {check.detail}")
        return _sealed(home, _leveled(home, _verdict(rid, [finding]), None, None), None, seal)
    statement = parse_statement(data)
    findings = [Finding(part="signature", status=Status.ok,
                        detail=f"signed by {check.signer}, a key this home trusts")]
    for part in (_identity, _figures, _physical, _quality, _contract, _environment,
                 _proof):
        findings += _guarded(part, home, rid, statement)
    review = _leveled(home, _verdict(rid, findings), statement, check.signer)
    review = review.model_copy(update={"findings": [*review.findings, *_claims(home, rid)]})
    return _sealed(home, review, statement, seal)


def _claims(home: Home, rid: str) -> list[Finding]:
    """Each claim that rests on the record, with the claim's own level: the one level
    `claim list` and `claim show` give (the record's level above is the record's)."""
    from registry.claims.events import claim_ids, replay
    from registry.claims.levels import claim_level

    out = []
    for cid in claim_ids(home):
        try:
            replayed = replay(home, cid)
        except RegistryError:  # a claim that does not replay is claim show's to report
            continue
        if rid in replayed.claim.records:
            level = claim_level(home, replayed)
            out.append(Finding(part="claim", status=Status.note,
                               detail=f"{cid}: level {level.level} ({level.reason})"))
    return out


def _leveled(home: Home, review: Review, statement: Statement | None,
             signer: str | None) -> Review:
    """The record's evidence level, derived (registry/claims/levels.py): `invalid` when
    the review rejects it, else from who signed it and whether it was reproduced."""
    from registry.claims.levels import Level, record_level

    rejected = next((f for f in review.findings if f.status is Status.reject), None)
    if rejected is not None or statement is None:
        why = f"{rejected.part}: {rejected.detail}" if rejected else "not verified"
        level = Level(level="invalid", reason=why)
    else:
        level = record_level(home, review.id, statement, signer)
    finding = Finding(part="evidence level", status=Status.note,
                      detail=f"{level.level}: {level.reason}")
    return review.model_copy(update={"evidence_level": level,
                                     "findings": [*review.findings, finding]})


def _sealed(home: Home, review: Review, statement: Statement | None, seal: bool) -> Review:
    from registry.review.attestation import review_statement
    from registry.store.verifications import seal_if_signer

    if not seal:
        return review
    sealed, why = seal_if_signer(home, lambda keyid: review_statement(review, statement, keyid))
    return review.model_copy(update={"verification": sealed, "not_sealed": why})


def _verdict(rid: str, findings: list[Finding]) -> Review:
    statuses = {f.status for f in findings}
    if Status.reject in statuses:
        verdict = Decision.reject
    elif Status.needs_evidence in statuses:
        verdict = Decision.needs_evidence
    else:
        verdict = Decision.accept
    return Review(id=rid, verdict=verdict, findings=findings)


Part = Callable[[Home, str, Statement], list[Finding]]


def _guarded(part: Part, home: Home, rid: str, statement: Statement) -> list[Finding]:
    """A part that cannot run is a finding (missing object: needs evidence; a
    document that is wrong: reject), never the end of the review."""
    try:
        return part(home, rid, statement)
    except RegistryError as e:
        status = Status.needs_evidence if e.exit_code in (ExitCode.UNVERIFIABLE,
                                                          ExitCode.NOT_FOUND) else Status.reject
        return [Finding(part=part.__name__.lstrip("_"), status=status, detail=e.message)]


def _identity(home: Home, rid: str, statement: Statement) -> list[Finding]:
    from registry.review.reresolve import reresolve

    again = reresolve(home, rid, statement)
    differs = [f for f in again.fields if not f.same]
    if differs:
        shown = "; ".join(f"{f.name}: signed {f.signed!r} ({f.signed_status}), evidence gives "
                          f"{f.again!r} ({f.status})" for f in differs[:8])
        return [Finding(part="identity", status=Status.reject,
                        detail=f"{len(differs)} field(s) not reproduced from the sealed "
                               f"evidence: {shown}")]
    out = [Finding(part="identity", status=Status.ok,
                   detail=f"{len(again.fields)} fields re-resolved from the sealed evidence, "
                          "all as signed")]
    mismatched = [name for name, f in statement.predicate.identity.fields.items()
                  if f.status.value == "mismatch"]
    if mismatched:
        overrides = {o.field for o in statement.predicate.overrides}
        unexplained = [m for m in mismatched if m not in overrides]
        out.append(Finding(part="identity", status=Status.reject if unexplained else Status.note,
                           detail=f"declared and resolved differ in {', '.join(mismatched)}"
                                  + (f"; no reason given for {', '.join(unexplained)}"
                                     if unexplained else " (the sealer gave reasons)")))
    return out


def _figures(home: Home, rid: str, statement: Statement) -> list[Finding]:
    from registry.contracts.sealed import sealed_run
    from registry.importer.published import recheck
    from registry.measure.results import suite_results

    p = statement.predicate
    if rundir.BENCH not in p.artifacts and not p.results:  # nothing to judge: not rejected
        published = f"; {len(p.published)} published figure(s), not re-derived" \
            if p.published else ""
        return [Finding(part="figures", status=Status.note,
                        detail=f"not judged: the record carries no rows and signs no "
                               f"figures{published}")]
    run = sealed_run(home, rid, statement)
    if not run.bench_intact:
        return [Finding(part="figures", status=Status.reject,
                        detail="bench.json no longer hashes to the digest the record signed")]
    again = {(s.suite, m.name): m.value for s in suite_results(run.bench, run.recipe)
             for m in s.metrics.values()}
    signed = {(s.suite, m.name): m.value for s in p.results for m in s.metrics.values()}
    wrong = [f"{suite} {name}: signed {value:.6g}, rows give {again.get((suite, name))}"
             for (suite, name), value in signed.items()
             if not _close(value, again.get((suite, name)))]
    out = [Finding(part="figures", status=Status.reject if wrong else Status.ok,
                   detail="; ".join(wrong[:8]) if wrong else
                   f"{len(signed)} figures re-derived from {len(run.bench.rows)} rows, all "
                   "as signed")]
    rows = run.bench.rows
    errors = sum(1 for r in rows if r.error)
    out.append(Finding(part="measurement", status=Status.note if rows else Status.needs_evidence,
                       detail=f"{len(rows)} rows, {errors} with errors" if rows
                       else "no raw rows: nothing to re-derive the figures from"))
    if p.published:
        figures = recheck(p.published, run.bench.rows)
        bad = [f for f in figures if f.agrees is False]
        unchecked = [f for f in figures if f.agrees is None]
        detail = (f"{len(figures) - len(bad) - len(unchecked)} of {len(figures)} published "
                  "figures agree with the rows")
        if bad:
            detail += "; disagree: " + "; ".join(
                f"{f.source} {f.key}: published {f.value:.6g}, rows give {f.rederived}"
                for f in bad[:5])
        if unchecked:
            detail += f"; {len(unchecked)} not re-derivable from the rows"
        out.append(Finding(part="published", status=Status.reject if bad else Status.ok,
                           detail=detail))
    return out


def _physical(home: Home, rid: str, statement: Statement) -> list[Finding]:
    """Rows whose times cannot be (sealed before they were refused at seal)."""
    from registry.contracts.sealed import sealed_run
    from registry.measure.physical import impossible_rows

    if rundir.BENCH not in statement.predicate.artifacts:
        return []  # no rows: nothing physical to judge (figures says so)
    bad = impossible_rows(sealed_run(home, rid, statement).bench.rows)
    if not bad:
        return []
    shown = "; ".join(f"row {r.index} ({r.prompt_id}): {why}" for r, why in bad[:3])
    return [Finding(part="timings", status=Status.reject,
                    detail=f"{len(bad)} row(s) with impossible times: {shown}")]


def _quality(home: Home, rid: str, statement: Statement) -> list[Finding]:
    """The headline figure as every view states it, with its measurement quality: a
    degraded one is never accepted silently (needs evidence: a clean re-run)."""
    from registry.formats.figures import record_headline
    from registry.measure.display import headline_text

    p = statement.predicate
    top = record_headline(p.results, p.imported is not None)
    if top.quality is None:
        return []
    shown = f"headline {headline_text(top)} tok/s" if top.metric else "no headline figure"
    if top.quality == "valid":
        return [Finding(part="quality", status=Status.ok,
                        detail=f"{shown}: measurement valid")]
    if top.quality == "degraded":
        return [Finding(part="quality", status=Status.needs_evidence,
                        detail=f"{shown}: the measurement is degraded ("
                               + "; ".join(top.reasons[:4]) + "); re-run it on a quiet host")]
    return [Finding(part="quality", status=Status.note,
                    detail=f"{shown}: measurement {top.quality}")]


def _close(a: float, b: float | None) -> bool:
    return b is not None and abs(a - b) <= TOLERANCE * max(abs(a), abs(b), 1e-12)


def _contract(home: Home, rid: str, statement: Statement) -> list[Finding]:
    from registry.contracts.check import check_record

    if statement.predicate.recipe is None:
        return [Finding(part="contract", status=Status.note,
                        detail="no recipe: no quality contract to judge")]
    result = check_record(home, rid)
    verdict = result.verdict
    if verdict is None:
        return [Finding(part="contract", status=Status.note, detail="contract `none`")]
    status = {"passed": Status.ok, "failed": Status.reject}.get(verdict.status.value,
                                                               Status.needs_evidence)
    return [Finding(part="contract", status=Status.reject if result.problems else status,
                    detail=f"{result.contract}: {verdict.status.value} (judged again on the "
                           f"rows)" + (f"; {'; '.join(result.problems)}" if result.problems
                                       else ""))]


def _environment(home: Home, rid: str, statement: Statement) -> list[Finding]:
    env = statement.predicate.environment
    host = {k: v for k, v in env.host_facts().items() if v not in (None, {}, [])}
    if not host and not env.variables:
        return [Finding(part="environment", status=Status.needs_evidence,
                        detail="the record carries no host or engine environment facts")]
    shown = ", ".join(f"{k}={v}" for k, v in sorted(host.items())[:6])
    return [Finding(part="environment", status=Status.note,
                    detail=f"{len(host)} host facts ({shown}), {len(env.variables)} engine "
                           "variables")]


def _proof(home: Home, rid: str, statement: Statement) -> list[Finding]:
    unproven = statement.predicate.unproven
    if unproven is None:
        return []
    return [Finding(part="proof", status=Status.needs_evidence,
                    detail=f"sealed as unproven: {unproven.model_dump_json()}")]
