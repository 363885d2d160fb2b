"""`registry list` and `registry show`: the records of a home, as people and scripts read
them (every record shown is checked against its signature first)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find

if TYPE_CHECKING:
    from registry.signing.signed import Trust
    from registry.store.index import RecordRow
    from registry.store.query import ShownRecord


def register(app: typer.Typer) -> None:
    app.command("list")(list_records)
    app.command()(show)


def list_records(
    where: Annotated[list[str] | None, typer.Option(
        "--where", show_default=False,
        help="FIELD OP VALUE, OP one of = != < <= > >= (typed: numbers as numbers).")] = None,
    limit: Annotated[int, typer.Option(min=0, help="Most recent N records; 0 for all.")] = 50,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """List records, newest first, filtered by identity fields, columns or metrics.

    Example: registry list --where precision.kv_cache=fp8_e4m3 --where 'parallel.tensor>1'
    """
    from registry.cli.output import console, print_fitted, print_json
    from registry.compare.table import filter_ids, split_where
    from registry.formats.record import UNPROVEN
    from registry.store.query import find_records

    target = find(home)
    equal, typed = split_where(where or [])
    rows = find_records(target, equal, None if typed else limit or None)
    if typed:
        kept = set(filter_ids(target, [r.id for r in rows], typed))
        rows = [r for r in rows if r.id in kept][:limit or None]
    if json:
        print_json(rows)
        return
    unproven = [r.summary.startswith(UNPROVEN) for r in rows]  # summary_line marks them
    # the model is in `show` and `compare --columns model.architecture`: 80 columns fit
    print_fitted(["id", "sealed", "lane", "weights", "kv cache", "tok/s"], [
        [_marked_id(r.id, r.trust, bad), r.created_at[:16].replace("T", " "), r.lane or "",
         r.weights or "", r.kv_cache or "", _decode_text(r) or ""]
        for r, bad in zip(rows, unproven, strict=True)],
        keep=[True, True, False, False, False, True])
    console.print(f"{len(rows)} records", highlight=False, soft_wrap=True)
    if any(unproven):
        console.print("! UNPROVEN: its evidence proves nothing (registry show ID says why)",
                      style="bold red", highlight=False)
    for r in rows:
        if r.trust != "verified" or r.trust_detail:
            console.print(f"{r.id[:16]} {(r.trust or 'unchecked').upper()}: "
                          f"{r.trust_detail or ''}", style="red", highlight=False)


def _marked_id(rid: str, trust: Trust | None, unproven: bool) -> str:
    """An id as a table cell; a record no trusted key signed, or an unproven one, is
    marked (the lines below the table say why)."""
    if trust != "verified":
        return f"{rid[:16]} {str(trust or '?').upper()}"
    return f"{rid[:16]}!" if unproven else rid[:16]


def _decode_text(r: RecordRow) -> str | None:
    """The decode median, flagged unless its measurement is valid."""
    if r.decode_tok_s is None:
        return None
    flag = "" if r.quality == "valid" else f" ({r.quality or 'not judged'})"
    return f"{r.decode_tok_s:.2f}{flag}"


def show(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Show a record: identity with evidence, results with formulas, sources.

    Example: registry show 3f2a9c --json
    """
    from registry.cli.output import print_json
    from registry.store.query import show_record

    found = show_record(find(home), record)
    if json:
        print_json(found)
        return
    _render(found)


def _render(record: ShownRecord) -> None:
    """A summary a person reads in one screen, then the details, each row on one line."""
    from collections import Counter

    from registry.cli.output import console, print_fitted, safe, shown
    from registry.formats.record import summary_line
    from registry.formats.unproven import mark
    from registry.measure.display import quality_lines, value_text

    p = record.statement.predicate
    check = record.check
    if not check.ok:
        console.print(f"{check.trust.value.upper()}: {check.detail or ''}; nothing below is "
                      f"vouched for (registry verify {record.id[:16]})", style="bold red",
                      highlight=False)
    decode = next((s.metrics["decode_tok_s.median"] for s in p.results
                   if "decode_tok_s.median" in s.metrics), None)
    statuses = Counter(f.status.value for f in p.identity.fields.values())
    flagged = sorted(n for n, f in p.identity.fields.items()
                     if f.status.value in ("mismatch", "unresolved"))
    facts = [("record", record.id), ("what", summary_line(p)),
             ("sealed", f"{p.run.sealed_at}  by "
                        f"{check.signer[:16] if check.signer else 'no trusted signer'}  "
                        f"ledger commit {(record.ledger_commit or '?')[:12]}"),
             ("recipe", (p.recipe or {}).get("name")), ("parent", p.parent),
             ("imported", p.imported and f"from {p.imported.capsule}; "
                                         f"{len(p.imported.missing)} manifest entries absent"),
             ("decode", decode and f"{decode.value:.2f} tok/s ({decode.formula}, "
                                   f"{decode.count} rows)"),
             ("identity", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))),
             ("check", ", ".join(flagged)),
             ("overrides", ", ".join(f"{o.field} ({o.reason})" for o in p.overrides))]
    for name, value in facts:
        if value:
            console.print(f"[bold]{name:9}[/] {safe(value)}", highlight=False, soft_wrap=False,
                          markup=True)
    unproven = mark(p.unproven, p.identity)
    if unproven:
        console.print(unproven, style="bold red", highlight=False)
    console.print(f"{len(record.statement.subject)} artifacts; details follow "
                  "(--json for everything)\n", highlight=False)
    print_fitted(["field", "value", "status", "evidence"], [
        [name, _value(f.declared, f.resolved), f.status.value,
         f"{f.evidence[0].source}:{f.evidence[0].line}" if f.evidence else ""]
        for name, f in sorted(p.identity.fields.items())],
        keep=[True, False, True, True], title="identity (value: resolved, else declared)")
    console.print()
    print_fitted(["suite", "metric", "value [95% CI]", "unit", "n"], [
        [s.suite, m.name, value_text(m, s.quality), m.unit, str(m.count)]
        for s in p.results for m in s.metrics.values()],
        keep=[False, True, True, True, True], title="results")
    for line in quality_lines(p.results):
        console.print(line, highlight=False)
    formulas = {m.name: m.formula for s in p.results for m in s.metrics.values()}
    for name, formula in formulas.items():  # below the table: a formula is never cut
        console.print(f"  {name} = {formula}", highlight=False, soft_wrap=False)
    console.print()
    print_fitted(["role", "commit", "dirty", "path"], [
        [s.role, (s.commit or "")[:12], shown(s.dirty), s.path] for s in p.sources],
        keep=[True, True, True, False], title="sources")
    if p.imported:
        from registry.cli.importing import print_imported

        print_imported(p)
    _print_verifications(record)


def _print_verifications(record: ShownRecord) -> None:
    """Every trusted verification that judged the record, one line each."""
    from registry.cli.output import console, print_fitted

    if not record.verifications:
        console.print("verifications: none", highlight=False)
        return
    console.print()
    print_fitted(["verification", "time", "policy", "result", "signer", "as"], [
        [v.id[:16], v.statement.predicate.time_verified, v.statement.predicate.policy.name,
         v.statement.predicate.result.value, v.signer[:16],
         next((role for role, rid in v.statement.predicate.records.items()
               if rid == record.id), "")]
        for v in record.verifications],
        keep=[True, True, True, True, False, True], title="verifications")


def _value(declared: object, resolved: object) -> str:
    from registry.cli.output import shown

    if resolved is None:
        return f"declared {shown(declared)}" if declared is not None else ""
    if declared is not None and declared != resolved:
        return f"{shown(resolved)} (declared {shown(declared)})"
    return shown(resolved)
