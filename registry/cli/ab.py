"""`registry ab A B`: a matched, interleaved A/B of two recipes or records."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.ab.result import AbResult, SuiteBoost


def register(app: typer.Typer) -> None:
    app.command()(ab)


def ab(
    a: Annotated[str, typer.Argument(show_default=False, help="Side A: recipe file or record.")],
    b: Annotated[str, typer.Argument(show_default=False, help="Side B: recipe file or record.")],
    delta: Annotated[list[str] | None, typer.Option(
        "--delta", show_default=False,
        help="What is meant to differ: an axis (quality-class, engine-args, ...) or a field "
             "(precision.kv_cache, engine.args.max_num_seqs). Repeatable.")] = None,
    starts: Annotated[int, typer.Option(
        "--starts", help="Engine starts per side before the first look at the verdict, in "
                         "the order A B B A A B ...")] = 3,
    max_starts: Annotated[int | None, typer.Option(
        "--max-starts", min=2, show_default=False,
        help="Go on a pair at a time until every suite is decided, at most this many starts "
             "per side (default: --starts, one look).")] = None,
    budget_minutes: Annotated[float | None, typer.Option(
        "--budget-minutes", show_default=False,
        help="Start no further pair once this many minutes have passed.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the plan and the comparability verdict; run nothing "
                          "(exit 0 comparable, 4 not).")] = False,
    models: Annotated[Path | None, typer.Option(
        "--models", help="Folder that ${REGISTRY_MODELS} names (default: the variable).")] = None,
    level: Annotated[float, typer.Option("--level", help="Confidence of the interval.")] = 0.95,
    noise: Annotated[float, typer.Option(
        "--noise", help="Percent within which a change is 'no difference'.")] = 2.0,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Folder of the starts' run directories. Default: runs/ab-<UTC time>.")]
    = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Compare A and B over alternating engine starts; each start is sealed as a record.

    Refused (exit 4, nothing run) when A and B differ on an axis --delta does not name.

    Example: registry ab bf16.toml fp8.toml --delta precision.kv_cache --starts 3
    """
    from registry.ab.runner import ab as run_ab
    from registry.cli.exits import compared, leave, with_code
    from registry.cli.output import print_json
    from registry.cli.run import progress, sealing_home, term_as_interrupt
    from registry.store.home import find_home

    found = find_home(home) if dry_run else sealing_home(home)
    with term_as_interrupt(), progress(json or dry_run) as bars:
        done = run_ab(found, a, b, deltas=delta or [], starts=starts, models_dir=models,
                      max_starts=max_starts, budget_minutes=budget_minutes,
                      out_dir=out, dry_run=dry_run, level=level, noise_pct=noise,
                      hooks=bars.hooks if bars else None,
                      on_start=None if json else _announce)
    code = compared(done)
    print_json(with_code(done, code)) if json else _print(done)
    leave(code)


def _announce(i: int, total: int, side: str) -> None:
    from registry.cli.output import err_console

    err_console.print(f"start {i + 1}/{total}: {side}", highlight=False)


def _print(done: AbResult) -> None:
    from registry.cli.output import console, print_fitted

    c = done.comparability
    console.print(f"A {done.a}\nB {done.b}", highlight=False)
    if c.differences:
        print_fitted(["axis", "field", "A", "B", "named"],
                     [[d.axis, d.field, _short(d.a), _short(d.b), "yes" if d.allowed else "NO"]
                      for d in c.differences], keep=[True, True, False, False, True],
                     title="differences")
    console.print("comparable" if c.comparable else
                  f"NOT COMPARABLE: {', '.join(c.refused_axes)} differ without --delta",
                  highlight=False)
    most = (f", then a pair at a time up to {done.max_starts} until decided"
            if done.max_starts and done.max_starts > done.starts_per_side and done.dry_run
            else "")
    console.print(f"plan: {' '.join(done.order)} ({done.starts_per_side} engine starts per "
                  f"side, each sealed{most})", highlight=False)
    if done.stopped:
        console.print(f"stopped: {done.stopped}", highlight=False)
    if done.dry_run:
        return
    for s in done.starts:
        console.print(f"  start {s.start} {s.side}: record {short_id(s.record)}  "
                      + "  ".join(_num(f.value) for f in s.figures) + " tok/s", highlight=False)
    if done.outcome and not done.outcome.comparable:
        console.print("outputs differ between A and B (quality outcome): no boost; name the "
                      "quality class with --delta to compare anyway", highlight=False)
    for suite in done.suites:
        _print_suite(done, suite)
    console.print(f"verdict: {done.verdict.upper()}", highlight=False)
    if done.verification:
        console.print(f"verification {short_id(done.verification)} signed and committed",
                      highlight=False)


def _print_suite(done: AbResult, s: SuiteBoost) -> None:
    from registry.cli.output import console, print_fitted

    print_fitted(["side", "figure tok/s", "per start"],
                 [["A", _num(s.a), " ".join(_num(v) for v in s.a_starts)],
                  ["B", _num(s.b), " ".join(_num(v) for v in s.b_starts)]],
                 keep=[True, True, False], title=f"suite {s.suite}: median of {s.formula}")
    iv = s.interval
    pct = int(done.level * 100)
    if s.boost_pct is None or iv is None:
        console.print("  no paired figure (a start without unflagged rows)", highlight=False)
    elif s.low_pct is None or s.high_pct is None:
        console.print(f"  ratio B/A {s.ratio:.3f}, boost {s.boost_pct:+.1f}%: {iv.method}",
                      highlight=False)
    else:
        console.print(f"  ratio B/A {s.ratio:.3f}  boost {s.boost_pct:+.1f}%  "
                      f"{pct}% interval [{s.low_pct:+.1f}%, {s.high_pct:+.1f}%]  "
                      f"delta {_num(s.delta_tok_s)} tok/s", highlight=False)
        console.print(f"  {iv.method}; {s.verdict}", highlight=False)
    if s.why is not None:
        console.print(f"  {s.verdict}: {s.why.reason}", highlight=False)
        console.print(f"  disturbance judged on: {s.why.basis or 'no start evidence'}",
                      highlight=False)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _short(value: object) -> str:
    """A value whole (a digest or a version is never cut: formats/display.py); the table
    wraps it between words."""
    return "-" if value is None else str(value)
