"""`registry diff A B`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from registry.cli.options import HomeOpt, Json

if TYPE_CHECKING:
    from registry.compare.diff import Diff, MetricDiff
    from registry.formats.record import PublishedFigure


def register(app: typer.Typer) -> None:
    app.command()(diff)


def diff(
    a: Annotated[str, typer.Argument(show_default=False, help="Record id/prefix or run dir.")],
    b: Annotated[str, typer.Argument(show_default=False, help="Record id/prefix or run dir.")],
    all_: Annotated[bool, typer.Option("--all", help="Show unchanged rows too.")] = False,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Compare two records (or unsealed run directories): identity, sources, metrics,
    outputs and contract comparability.

    Example: registry diff 3f2a9c 8b1d07
    """
    from registry.compare.diff import diff as compare
    from registry.compare.sides import load_side

    result = compare(load_side(a, home=home), load_side(b, home=home))
    if json:
        from registry.cli.output import print_json

        print_json(result)
    else:
        render(result, show_all=all_)


def _value(field: Any) -> str:
    """An identity value as every view writes it (formats/display.py): `?` unresolved."""
    from registry.formats.display import NO_FIGURE, identity
    from registry.formats.identity import failed_check

    if field is None:
        return NO_FIGURE
    shown = identity(field.resolved)
    if field.declared is not None and field.declared != field.resolved:
        shown = f"{shown} (declared {identity(field.declared)})"
    return shown + (" (cross-check failed)" if failed_check(field) else "")


def _flagged(value: float | None, quality: str | None) -> str:
    """A figure with its measurement flag unless valid, as docs/cli.md says: `(degraded)`
    beside every degraded figure (engine facts carry no flag)."""
    from registry.formats.display import flagged

    return _num(value) if value is None or quality in (None, "valid") else \
        flagged(_num(value), quality)


def _noise(beyond: bool | None) -> str:
    return "" if beyond is None else (" !" if beyond else " ~")


def _num(x: float | None) -> str:
    from registry.formats.display import number

    return number(x)


def _percent(x: float | None) -> str:
    return "" if x is None else f"{x * 100:+.2f}%"


def _published(f: PublishedFigure | None) -> str:
    if f is None:
        return ""
    if f.rederived is None:
        return f"{_num(f.value)} (not re-derived)"
    return f"{_num(f.value)} {'=' if f.agrees else '≠ FINDING'} rows {_num(f.rederived)}"


def _metrics_table(metrics: list[MetricDiff]) -> None:
    """Suite by suite: a suite's quality on each side goes in its title, so a flag is
    never cut from its figure and the numbers keep their columns at 80."""
    from registry.cli.output import console, print_fitted
    from registry.formats.display import metric_label

    console.print("metrics (relative: ~ within noise, ! beyond it; 95% intervals)",
                  style="bold", highlight=False)
    for suite in dict.fromkeys(m.suite for m in metrics):
        group = [m for m in metrics if m.suite == suite]
        qa, qb = group[0].quality_a, group[0].quality_b
        sides = "" if qa is None and qb is None else \
            f": a {qa or 'not judged'}, b {qb or 'not judged'}"
        # a metric name has no space to break at; the other formula's label may wrap
        # before its formula, `decode_tok_s.median` / `(100/(t[99]-t[0]))`
        print_fitted(["metric", "a", "b", "delta", "relative", "ratio"], [
            [metric_label(m.name, m.formula_a), _flagged(m.a, m.quality_a),
             _flagged(m.b, m.quality_b),
             _num(m.delta), _percent(m.relative) + _noise(m.beyond_noise),
             f"{m.ratio:.2f}x" if m.ratio is not None else ""] for m in group],
            keep=[False, True, True, True, True, True], drop=[5, 3], title=f"  {suite}{sides}")


def render(d: Diff, *, show_all: bool) -> None:
    from registry.base.text import one_line
    from registry.cli.output import console, say_wrapped, shown, table
    from registry.formats.display import metric_label
    from registry.formats.identity import PRECISION_AXES

    console.print(f"a: {one_line(d.a)}\nb: {one_line(d.b)}", highlight=False)
    for side, why in sorted(d.unproven.items()):
        console.print(f"{side}: {why}", style="bold red", highlight=False)
    rows = [[("* " if f.changed else "  ") + f.name, f.kind.value, _value(f.a), _value(f.b)]
            for f in d.identity if show_all or f.changed or f.name in PRECISION_AXES]
    console.print(table("identity (changed first; precision axes always shown; ? unresolved)",
                        ["field", "kind", "a", "b"], rows, keep=[True, True, False, False],
                        drop=[1]))
    sources = [[s.role, s.a and s.a.commit, s.b and s.b.commit,
                f"{shown(s.a and s.a.dirty)} / {shown(s.b and s.b.dirty)}",
                shown(s.diff_digests_equal)]
               for s in d.sources if show_all or s.changed]
    if sources:
        console.print(table("sources", ["role", "a commit", "b commit", "dirty a / b",
                                        "same uncommitted diff"], sources))
    shown_metrics = [m for m in d.metrics if show_all or m.comparable or m.note]
    if shown_metrics:  # delta is b - a, as docs/diff.md defines it; the relative change beside
        _metrics_table(shown_metrics)
        notes = {metric_label(m.name, m.formula_a): m.note or m.formula_a
                 for m in shown_metrics}
        for name, note in notes.items():  # below the table: never cut
            say_wrapped(f"{name}: {note}", label="  ", indent=4)
    if d.published:
        console.print(table("published by the lab (re-derived from each side's rows)",
                            ["figure", "a", "b"], [
            [f"{p.metric} {p.aggregation}", _published(p.a), _published(p.b)]
            for p in d.published]))
    outputs = [[o.suite, o.prompt_id, "equal" if o.equal else
                f"differs at {o.first_diff_index}: {o.a_token} vs {o.b_token}",
                shown(o.text_equal)]
               for o in d.outputs if show_all or not o.equal]
    equal = sum(1 for o in d.outputs if o.equal)
    console.print(f"outputs: {equal}/{len(d.outputs)} prompts token-identical", highlight=False)
    if outputs:
        console.print(table(None, ["suite", "prompt", "tokens", "text equal"], outputs))
    console.print(table("contracts", ["contract", "comparable", "why"], [
        [c.contract, "yes" if c.comparable else "REFUSED", "; ".join(c.reasons)]
        for c in d.contracts]))
