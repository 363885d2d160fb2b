"""`registry claim add|show|list|advance|import|lab-key`: claims, their lifecycle and
their evidence levels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.app import new_app
from registry.cli.options import HomeOpt, Json, find
from registry.errors import InvalidInput
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.claims.view import ClaimView

claim_app = new_app("Claims: published figures, their lifecycle and evidence level.")

ClaimArg = Annotated[str, typer.Argument(show_default=False, help="Claim id.")]
Opt = Annotated[str | None, typer.Option(show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(claim_app, name="claim")


@claim_app.command("add")
def add(
    claim: ClaimArg,
    value: Annotated[float, typer.Option("--value", show_default=False,
                                         help="The claimed figure.")],
    metric: Annotated[str, typer.Option("--metric", show_default=False,
                                        help="The metric, in the claimant's words (kept "
                                             "verbatim).")],
    by: Annotated[str, typer.Option("--by", show_default=False,
                                    help="The claimant (`lab` for the lab's own).")],
    date: Opt = None,
    unit: Annotated[str, typer.Option(help="Unit of the figure.")] = "tok/s",
    model: Opt = None,
    checkpoint: Opt = None,
    quantization: Opt = None,
    kv_cache: Annotated[str | None, typer.Option("--kv-cache", show_default=False)] = None,
    engine: Opt = None,
    engine_version: Annotated[str | None, typer.Option("--engine-version",
                                                       show_default=False)] = None,
    patch: Annotated[str | None, typer.Option(
        show_default=False, help="sha256 of the engine tree's diff, or `none`.")] = None,
    speculative: Opt = None,
    hardware: Annotated[str | None, typer.Option(show_default=False,
                                                 help="e.g. B70, H200, cpu.")] = None,
    cards: Annotated[int | None, typer.Option(show_default=False)] = None,
    tp: Annotated[int | None, typer.Option(show_default=False)] = None,
    quality_gate: Annotated[str | None, typer.Option(
        "--quality-gate", show_default=False, help="The contract that must pass.")] = None,
    evidence: Annotated[list[str] | None, typer.Option(
        "--evidence", show_default=False, help="An evidence reference (repeatable).")] = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Register a claim (state `submitted`), signed into the ledger.

    Example: registry claim add tiny-bf16 --value 420 --metric "median 99/(t[99]-t[0])"
    --by lab --model tiny-llama --quantization bfloat16 --engine vllm --hardware cpu --tp 1
    --quality-gate bitwise-teacher
    """
    from registry.claims.models import ClaimBody, ClaimedFigure, ClaimedIdentity
    from registry.claims.register import add_claim
    from registry.formats.metricwords import named

    identity = ClaimedIdentity(model=model, checkpoint=checkpoint, quantization=quantization,
                               kv_cache=kv_cache, engine=engine, engine_version=engine_version,
                               patch=patch, speculative=speculative, hardware=hardware,
                               cards=cards, tp=tp, quality_gate=quality_gate)
    body = ClaimBody(id=claim, model=model, evidence=evidence or [], identity=identity,
                     claimed=ClaimedFigure(value=value, unit=unit, metric=named(metric),
                                           by=by, date=date))
    _print(add_claim(find(home), body), json)


@claim_app.command("advance")
def advance(
    claim: ClaimArg,
    to: Annotated[str, typer.Option("--to", show_default=False,
                                    help="queued | reproducing | confirmed | "
                                         "confirmed-adjusted | refuted | stale | "
                                         "lab-verified")],
    verification: Annotated[str | None, typer.Option(
        "--verification", show_default=False,
        help="The attestation the move rests on (id or prefix).")] = None,
    record: Annotated[str | None, typer.Option(
        "--record", show_default=False,
        help="Which judged record to match (default: the one it measured).")] = None,
    moved: Annotated[list[str] | None, typer.Option(
        "--moved", show_default=False, help="AXIS=NOW: what moved (stale).")] = None,
    note: Opt = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Move a claim; the state machine checks the evidence before the move is signed.
    Exit 6 when the move is refused (the message says what is missing).

    Example: registry claim advance tiny-bf16 --to confirmed --verification 9c1d
    """
    from registry.claims.models import State
    from registry.claims.register import advance_claim

    try:
        target = State(to)
    except ValueError:
        raise InvalidInput(f"--to {to!r}: not a state ({', '.join(s.value for s in State)})"
                           ) from None
    pairs = {}
    for item in moved or []:
        axis, sep, now = item.partition("=")
        if not sep or not axis:
            raise InvalidInput(f"--moved {item!r}: expected AXIS=NOW")
        pairs[axis] = now
    _print(advance_claim(find(home), claim, target, verification=verification, record=record,
                         moved=pairs, note=note), json)


@claim_app.command("show")
def show(claim: ClaimArg, home: HomeOpt = None, json: Json = False) -> None:
    """Show a claim: figures, status, history, evidence level and why.

    Example: registry claim show lab-laguna-s-21-int4-dflash-tp4 --json
    """
    from registry.claims.view import show_claim

    _print(show_claim(find(home), claim), json)


@claim_app.command("list")
def list_(home: HomeOpt = None, json: Json = False) -> None:
    """Every claim: status, claimed and verified figure, evidence level.

    Example: registry claim list --json
    """
    from registry.claims.view import list_claims
    from registry.cli.output import console, print_fitted, print_json, safe

    claims = list_claims(find(home))
    if json:
        print_json(claims)
        return
    from registry.claims.view import ClaimView

    # the lab's word (its status and level) beside the level the registry derives
    print_fitted(["claim", "status", "claimed", "verified", "lab states", "level (derived)"], [
        [c.id, c.status, _value(c.claimed.value), _value(c.verification.value),
         _lab_states(c), c.evidence_level.level] if isinstance(c, ClaimView) else
        [c.id, c.status, "-", "-", "-", "-"] for c in claims],
        keep=[False, True, True, True, False, False], title="claims")
    for c in claims:
        if not isinstance(c, ClaimView):
            console.print(f"{safe(c.id)}: {safe(c.reason)}", highlight=False, markup=False)
    console.print(f"{len(claims)} claims", highlight=False)


@claim_app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(
        show_default=False, help="A claim file, or a folder holding claims/*.json or "
                                 "claim.json packets.")],
    records: Annotated[bool, typer.Option(
        "--records/--no-records", help="Also import packets holding run evidence as "
                                       "records.")] = True,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Import a lab's claims with their history (attributed to the lab) and evidence.

    Example: registry claim import ~/b70-optimization-lab
    """
    from registry.claims.labimport import import_claims
    from registry.cli.output import console, print_fitted, print_json

    report = import_claims(find(home), path, records=records)
    if json:
        print_json(report)
        return
    print_fitted(["claim", "status", "claimed", "records", "rows", "note"], [
        [c.id, c.status, _value(c.claimed), str(len(c.records)), str(c.rows), c.note or ""]
        for c in report.claims], keep=[False, True, True, True, True, False],
        title=f"claims imported from {report.source}")
    console.print(f"{report.added} added, {len(report.claims) - report.added} already there",
                  highlight=False)


@claim_app.command("lab-key")
def lab_key(
    keyids: Annotated[list[str], typer.Argument(show_default=False,
                                                help="Full key ids of keyring signers.")],
    home: HomeOpt = None,
) -> None:
    """Trust exactly these keys as the lab's (evidence levels: a run signed by one is
    lab-tested). Kept in the home, never in the ledger.

    Example: registry claim lab-key 3f2a9c...
    """
    from registry.claims.labkeys import set_lab_keys
    from registry.cli.output import console

    for k in set_lab_keys(find(home), keyids):
        console.print(f"lab key {k}", highlight=False)


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _lab_states(view: ClaimView) -> str:
    lab = view.lab
    return "-" if lab is None else lab.status + (f", {lab.level}" if lab.level else "")


def _lab_says(view: ClaimView) -> str:
    """What the lab's file states, verbatim, beside what the registry derives."""
    lab = view.lab
    assert lab is not None
    return (f"status {lab.status}, level {lab.level or 'not stated'}, "
            f"figure {_value(lab.figure)} ({lab.metric or 'no metric named'}), in {lab.file}")


def _derived(view: ClaimView) -> str:
    d = view.derived
    figure = (f"figure {_value(d.figure)} re-derived from record {short_id(d.record)}"
              if d.figure is not None and d.record else
              f"figure {_value(d.figure)} re-derived from the packet's {d.series}"
              if d.figure is not None and d.series else
              f"figure {_value(d.figure)} re-derived" if d.figure is not None else
              f"figure not re-derived: {d.not_rederived}")
    return f"level {d.level.level} ({d.level.reason}); {figure}"


def _print(view: ClaimView, json: bool) -> None:
    from registry.cli.output import console, print_fitted, print_json, safe

    if json:
        print_json(view)
        return
    c, v = view.claimed, view.verification
    facts = [("claim", view.id), ("model", view.model),
             ("trust", view.trust_reason and f"{view.trust}: {view.trust_reason}"),
             ("status", f"{view.status} (stated by {view.status_by})"),
             ("claimed", f"{_value(c.value)} ({c.metric}) by {c.by}, {c.date or '?'}"),
             ("verified", v.value is not None and f"{_value(v.value)} ({v.metric}), {v.date or '?'}"
                                + (f", record {short_id(v.record)}" if v.record else "")
                                + (f", evidence {v.evidence}" if v.evidence else "")),
             ("lab says", view.lab and _lab_says(view)),
             ("derived", _derived(view))]
    for name, value in facts:
        if value:
            console.print(f"[bold]{name:9}[/] {safe(value)}", highlight=False, markup=True)
    if view.axes:
        print_fitted(["axis", "claim", "record", "outcome"],
                     [[a.axis, a.claimed or "-", a.record or "-", a.outcome] for a in view.axes],
                     keep=[True, False, False, True], title="confirmation axes")
    console.print("history (the lab's statements, then this ledger's signed events)",
                  style="bold", highlight=False)
    for h in view.history:  # whole: a statement is never cut (rich wraps it to the width)
        who = "lab" if h.by.startswith("lab (") else f"key {short_id(h.by)}"
        console.print(f"  {h.date or '?':10}  [{who}] {safe(h.event)}", highlight=False,
                      markup=False)
    for label, items in (("conflicts (signed, kept, never applied)", view.conflicts),
                         ("untrusted events (never applied)", view.untrusted)):
        if items:
            console.print(label, style="bold", highlight=False)
        for n in items:
            who = f" [key {short_id(n.by)}]" if n.by else ""
            console.print(f"  {short_id(n.id)}{who} {safe(n.reason)}", highlight=False,
                          markup=False)
