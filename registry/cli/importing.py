"""How `registry import` reports: per record its manifest check, results, the lab's
published figures beside their re-derivation, and findings; per folder one table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.base.text import one_line

if TYPE_CHECKING:
    from registry.cli.output import Grid
    from registry.formats.record import Predicate, PublishedFigure
    from registry.importer.capsule import ImportedRecord
    from registry.importer.folder import FolderImport

HEADLINE = ("decode_tok_s.median", "decode_tok_s_other_formula.median")


def print_records(records: list[ImportedRecord]) -> None:
    from registry.cli.output import console

    for done in records:
        i = done.imported
        again = " (already imported: the same record)" if done.already else ""
        console.print(f"{done.record.id}{again}", highlight=False, markup=False)
        console.print(f"arm {done.arm or '(capsule root)'} of {done.capsule}; state {done.state}"
                      f"; recipe {done.recipe or 'none (declared from the capsule)'}",
                      highlight=False, markup=False)
        console.print(f"manifest {i.manifest or 'none'}: {len(i.verified)} files verified, "
                      f"{len(i.missing)} listed but absent", highlight=False, markup=False)
        for name in i.missing:
            console.print(f"  absent: {one_line(name)}", highlight=False, markup=False)
        for name in i.unlisted:
            console.print(f"  not in the manifest: {one_line(name)}", highlight=False,
                          markup=False)
        for suite in done.results:
            for name in HEADLINE:
                if name in suite.metrics:
                    m = suite.metrics[name]
                    console.print(f"{suite.suite}: {m.value} {m.unit} = {m.formula} "
                                  f"({m.count} rows)", highlight=False, markup=False)
        if done.published:
            console.print(published_table(done.published))
        for finding in done.findings:
            # one line each: a capsule file name holding a newline forges no `finding:`
            console.print(f"finding: {one_line(finding)}", style="bold yellow",
                          highlight=False, markup=False)


def published_table(figures: list[PublishedFigure]) -> Grid:
    from registry.cli.output import table

    # where it is published (file and key) tells apart two figures of one value
    return table("published by the lab / re-derived from the rows",
                 ["figure", "where", "published", "re-derived", "agrees"],
                 [[f"{p.metric} {p.aggregation}", f"{p.source} {p.key}", f"{p.value:.10g}",
                   _not_rederived(p) if p.rederived is None else f"{p.rederived:.10g}",
                   {True: "yes", False: "NO", None: "-"}[p.agrees]] for p in figures],
                 keep=[True, False, True, False, True])  # "where" wraps between words


def _not_rederived(p: PublishedFigure) -> str:
    """Why a published figure has no re-derived value, in words."""
    why = (p.note or "").split("not re-derived: ", 1)
    return f"not re-derived: {why[1]}" if len(why) == 2 else "not re-derived: no rows"


def print_imported(p: Predicate) -> None:
    """`registry show` of an imported record: provenance, published figures, findings."""
    from registry.cli.output import console, say_wrapped
    from registry.importer.findings import findings

    i = p.imported
    if i is None:
        return
    say_wrapped(f"imported from {i.capsule}" + (f", arm {i.arm}" if i.arm else "")
                + (f" (arms: {', '.join(i.arms)})" if len(i.arms) > 1 else "")
                + f"; manifest {i.manifest or 'none'}; missing from the capsule: "
                f"{one_line(', '.join(i.missing)) or 'none'}", indent=2)
    for name, source in sorted(i.declared_by.items()):
        say_wrapped(f"declared {name} by {one_line(source)}", label="  ", indent=4)
    if p.published:
        console.print(published_table(p.published))
    for finding in findings(p):
        console.print(f"finding: {one_line(finding)}", style="bold yellow", highlight=False,
                      markup=False)


def print_folder(done: FolderImport) -> None:
    from registry.cli.output import console, table
    from registry.formats.figures import headline

    rows = []
    for r in done.records:
        decode = headline(r.results).value
        checked = [p for p in r.published if p.agrees is not None]
        rows.append([r.capsule, r.arm or "-", r.record.id[:12] + ("=" if r.already else ""),
                     r.state, "-" if decode is None else f"{decode:.2f}",
                     f"{sum(bool(p.agrees) for p in checked)}/{len(checked)}",
                     len(r.findings)])
    console.print(table(f"imported {len(done.records)} records", ["capsule", "arm", "record",
                        "state", "tok/s", "published ok", "findings"], rows))
    for p in done.skipped:
        console.print(f"skipped {p.capsule}: {p.message}", highlight=False, markup=False)
    for p in done.failed:
        console.print(f"failed {p.capsule}: {p.message}", style="red", highlight=False,
                      markup=False)
