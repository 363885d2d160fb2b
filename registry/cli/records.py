"""`registry list` and `registry show`: the records of a home, as people and scripts read
them (every record shown is checked against its signature first)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find

if TYPE_CHECKING:
    from registry.compare.table import Condition
    from registry.measure.evidence import StartEvidence
    from registry.signing.signed import Trust
    from registry.store.home import Home
    from registry.store.rows import RecordRow
    from registry.store.shown import ShownRecord


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
    from registry.cli.output import print_fitted, print_json, say
    from registry.formats.display import identity, short_id, when
    from registry.formats.record import UNPROVEN
    from registry.store.query import find_records

    target = find(home)
    equal, typed = _split_where(where or [])
    rows = find_records(target, equal, None if typed else limit or None)
    if typed:
        from registry.compare.table import filter_ids

        kept = set(filter_ids(target, [r.id for r in rows], typed))
        rows = [r for r in rows if r.id in kept][:limit or None]
    if json:
        print_json(rows)
        return
    unproven = [r.summary.startswith(UNPROVEN) for r in rows]  # summary_line marks them
    # the model is in `show` and `compare --columns model.architecture`; identity values are
    # never cut or broken (formats/display.py): at 80 columns the seal time goes first
    print_fitted(["id", "sealed", "lane", "weights", "kv cache", "tok/s", "quality"], [
        [_marked_id(r.id, r.trust, bad), when(r.created_at), r.lane or "-",
         identity(r.weights), identity(r.kv_cache) + ("!" if r.failed_checks else ""),
         _decode_text(r), _quality(r)]
        for r, bad in zip(rows, unproven, strict=True)],
        keep=[True, True, True, True, True, True, True], drop=[1, 3])
    say(f"{len(rows)} records")
    if not rows:
        hint = _lane_hint(target, where or [])
        if hint:
            say((hint, "yellow"))
    if any(unproven):
        say(("! UNPROVEN: its evidence proves nothing (registry show ID says why)", "bold red"))
    for r in rows:
        if r.failed_checks:
            say((f"{short_id(r.id)}! {', '.join(r.failed_checks)}: a cross-check failed "
                 "(registry show ID says which)", "red"))
        if r.trust != "verified" or r.trust_detail:
            say((f"{short_id(r.id)} {(r.trust or 'unchecked').upper()}: "
                 f"{r.trust_detail or ''}", "red"))


def _split_where(where: list[str]) -> tuple[list[str], list[Condition]]:
    """(terms the index answers, typed conditions); the comparison table, which parses
    the terms, is imported only when there are terms (a plain list does without it)."""
    if not where:
        return [], []
    from registry.compare.table import split_where

    return split_where(where)


def _lane_hint(home: Home, where: list[str]) -> str | None:
    """`--where lane=NAME` where NAME is a recipe's name, not a lane: say so."""
    from registry.store.query import find_records

    for term in where:
        name, _, value = term.partition("=")
        if name.strip() == "lane" and value.strip():
            found = find_records(home, [f"recipe={value.strip()}"], 1)
            if found:
                return (f"no record's lane is {value.strip()}, but recipe {value.strip()} has "
                        f"records (lane {found[0].lane}): --where recipe={value.strip()}")
    return None


def _marked_id(rid: str, trust: Trust | None, unproven: bool) -> str:
    """An id as a table cell; a record no trusted key signed, or an unproven one, is
    marked (the lines below the table say why)."""
    from registry.formats.display import short_id

    if trust != "verified":
        return f"{short_id(rid)} {str(trust or 'unchecked').upper()}"
    return f"{short_id(rid)}!" if unproven else short_id(rid)


def _decode_text(r: RecordRow) -> str:
    """The signed decode median (`-` when the record has results but not this figure)."""
    if r.headline is None:  # not checked against its statement: nothing is vouched for
        return ""
    return "-" if r.headline.value is None and r.headline.quality else (
        f"{r.headline.value:.2f}" if r.headline.value is not None else "")


def _quality(r: RecordRow) -> str:
    """The headline's quality (`not judged` for an imported record's published figures;
    an unproven record's id is marked `!`, the line below the table says why)."""
    from registry.formats.display import quality

    word = (quality(r.headline.quality) if r.headline.quality or r.imported else "") \
        if r.headline else ""
    return word


def show(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Show a record: identity with evidence, results with formulas, sources.

    Example: registry show 3f2a9c --json
    """
    from registry.cli import exits
    from registry.cli.output import print_json
    from registry.store.shown import show_record

    target = find(home)
    found = show_record(target, record)
    found = found.model_copy(update={"starts": _starts(target, found)})
    code = exits.shown(found)  # shown, under its banner, but not as a record that verifies
    if json:
        print_json({**exits.with_code(found, code), **_labels(found)})
    else:
        _render(found)
        _print_starts(found)
    exits.leave(code)


def _labels(record: ShownRecord) -> dict[str, dict[str, str]]:
    """`metric_labels`: stored metric name -> the name every view shows, where they differ
    (the other formula's decode figure under the lab's name; formats/display.py)."""
    from registry.formats.display import metric_label

    labels = {m.name: metric_label(m.name, m.formula)
              for s in record.statement.predicate.results for m in s.metrics.values()}
    shown = {name: label for name, label in labels.items() if label != name}
    return {"metric_labels": shown} if shown else {}


def _starts(home: Home, record: ShownRecord) -> list[StartEvidence]:
    """Each engine start's disturbance evidence, for a record of several starts (rule and
    thresholds: docs/measurement.md, "Disturbed starts"): the one source of the table and
    of `--json`. A record of one start is known by its subjects, before anything is read
    or imported (`show` stays light)."""
    if not any(s.name.startswith("starts/") for s in record.statement.subject):
        return []
    from registry.contracts.sealed import sealed_run
    from registry.errors import RegistryError
    from registry.reproduce.host import starts_evidence

    try:
        rows = sealed_run(home, record.id, record.statement).bench.timed_rows
    except RegistryError:
        return []  # no rows to read back: the banner already says why
    return starts_evidence(home, record.statement, rows)


def _print_starts(record: ShownRecord) -> None:
    if not record.starts:
        return
    from registry.cli.output import print_fitted, say

    def num(x: float | None, form: str) -> str:
        return "" if x is None else format(x, form)

    say()
    print_fitted(["start", "tok/s", "row spread", "GPU busy %", "power W", "SM MHz",
                  "probe s", "stream", "disturbed"], [
        [str(e.start), num(e.figure, ".1f"), num(e.spread, ".3f"), num(e.busy_pct, ".0f"),
         num(e.power_w, ".0f"), num(e.sm_mhz, ".0f"), num(e.probe_cpu_s, ".3f"),
         e.stream[:12], e.disturbed or "no"]
        for e in record.starts], keep=[True, True, True, True, True, True, True, True, False],
        title="engine starts")
    say(f"disturbance judged on: {'; '.join(sorted({e.basis for e in record.starts}))}")


def _render(record: ShownRecord) -> None:
    """A summary a person reads in one screen, then the details, each row on one line."""
    from collections import Counter

    from registry.base.text import one_line
    from registry.cli.output import print_fitted, say, say_wrapped, shown
    from registry.formats.display import UNRESOLVED, commit, metric_label, short_id
    from registry.formats.figures import record_headline
    from registry.formats.identity import failed_check
    from registry.formats.record import summary_line
    from registry.formats.unproven import mark
    from registry.measure.display import headline_text, quality_lines, value_text

    p = record.statement.predicate
    check = record.check
    if not check.ok:
        say((f"{check.trust.value.upper()}: {check.detail or ''}; nothing below is vouched "
             f"for (registry verify {short_id(record.id)})", "bold red"))
    elif record.artifacts:
        word = "INVALID" if record.artifacts_changed else "UNVERIFIABLE"
        say((f"{word}: {one_line(record.artifacts[0])}"
             + (f" (and {len(record.artifacts) - 1} more)" if len(record.artifacts) > 1 else "")
             + f"; the figures below may not be what was sealed (registry verify "
               f"{short_id(record.id)})", "bold red"))
    top = record_headline(p.results, p.imported is not None)
    decode = top.metric
    failed = {n: note for n, f in p.identity.fields.items() if (note := failed_check(f))}
    statuses = Counter(f.status.value for f in p.identity.fields.values())
    flagged = sorted(n for n, f in p.identity.fields.items()
                     if f.status.value in ("mismatch", "unresolved"))
    facts = [("record", record.id), ("what", summary_line(p)),
             ("sealed", f"{p.run.sealed_at[:19].replace('T', ' ')} by "
                        f"{short_id(check.signer) if check.signer else 'no trusted signer'}"),
             ("commit", f"ledger commit {commit(record.ledger_commit) or UNRESOLVED}"),
             ("recipe", (p.recipe or {}).get("name")), ("parent", p.parent),
             ("imported", p.imported and f"from {p.imported.capsule}; "
                                         f"{len(p.imported.missing)} manifest entries absent"),
             ("decode", headline_text(top, interval=True) + (
                 f" tok/s ({decode.formula}, {decode.count} rows)" if decode else
                 ": no row left for the decode figures" if top.quality else "")),
             ("quality", top.quality and top.quality + (
                 f" ({len(top.reasons)} reasons below the results)" if top.reasons else "")),
             ("identity", ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))),
             ("check", ", ".join(flagged)),
             ("FAILED", "; ".join(f"{n}: {note}" for n, note in sorted(failed.items()))),
             ("overrides", ", ".join(f"{o.field} ({o.reason})" for o in p.overrides)),
             ("redacted", p.redactions and f"{len(p.redactions)} secrets, before hashing: "
                          + ", ".join(f"{r.file}:{r.line} ({r.why})" if r.line else
                                      f"{r.file} ({r.why})" for r in p.redactions[:5])
                          + (", ..." if len(p.redactions) > 5 else ""))]
    for name, value in facts:
        if value:
            say_wrapped(str(value), label=f"{name:9} ")
    unproven = mark(p.unproven, p.identity)
    if unproven:
        say((unproven, "bold red"))
    say(f"{len(record.statement.subject)} artifacts; details follow (--json for everything)\n")
    # identity values are never broken (formats/display.py): at 80 columns the evidence,
    # then the status (counted in the summary above) give way
    print_fitted(["field", "value", "status", "evidence"], [
        [name, _value(f.declared, f.resolved, f.status.value) + (
            " (cross-check failed)" if name in failed else ""), f.status.value,
         f"{f.evidence[0].source}:{f.evidence[0].line}" if f.evidence else ""]
        for name, f in sorted(p.identity.fields.items())],
        keep=[True, False, True, False], drop=[3, 2],
        title=f"identity (value: resolved, else declared; {UNRESOLVED}: unresolved)")
    say()
    say(("results", "bold"))
    for suite in p.results:  # the suite in a title: never squeezed beside its figures
        print_fitted(["metric", "value [95% CI]", "unit", "n"], [
            [metric_label(m.name, m.formula), value_text(m, suite.quality), m.unit,
             str(m.count)]
            for m in suite.metrics.values()],
            keep=[True, True, True, True], title=f"  {suite.suite}")
    for line in quality_lines(p.results):
        for n, part in enumerate(line.split("\n")):
            say_wrapped(part.strip(), indent=4 if n else 2, label="  " * min(n, 1))
    formulas = {metric_label(m.name, m.formula): m.formula
                for s in p.results for m in s.metrics.values()}
    for name, formula in formulas.items():  # below the table: a formula is never cut
        say_wrapped(f"{name} = {formula}", label="  ", indent=4)
    say()
    print_fitted(["role", "commit", "dirty", "path"], [
        [s.role, commit(s.commit), shown(s.dirty), s.shown_path] for s in p.sources],
        keep=[True, True, True, False], title="sources")
    if p.imported:
        from registry.cli.importing import print_imported

        print_imported(p)
    _print_verifications(record)


def _print_verifications(record: ShownRecord) -> None:
    """Every trusted verification that judged the record, one line each."""
    from registry.cli.output import print_fitted, say
    from registry.formats.display import short_id, when

    if not record.verifications:
        say("verifications: none")
        return
    say()
    print_fitted(["verification", "time", "policy", "result", "signer", "as"], [
        [short_id(v.id), when(v.statement.predicate.time_verified),
         v.statement.predicate.policy.name, v.statement.predicate.result.value,
         short_id(v.signer),
         next((role for role, rid in v.statement.predicate.records.items()
               if rid == record.id), "")]
        for v in record.verifications],
        keep=[True, True, True, True, True, True], drop=[1, 4], title="verifications")


def _value(declared: object, resolved: object, status: str) -> str:
    from registry.cli.output import shown
    from registry.formats.display import UNRESOLVED

    if resolved is None:
        unknown = UNRESOLVED if status == "unresolved" else ""
        return f"{unknown} (declared {shown(declared)})".strip() if declared is not None \
            else unknown
    if declared is not None and declared != resolved:
        return f"{shown(resolved)} (declared {shown(declared)})"
    return shown(resolved)
