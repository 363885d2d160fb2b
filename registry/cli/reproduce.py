"""`registry reproduce ID`: re-run a sealed record and print the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.reproduce import Reproduction
    from registry.reproduce.judge import SuitePerformance


def register(app: typer.Typer) -> None:
    app.command()(reproduce)


def reproduce(
    record: Annotated[str, typer.Argument(show_default=False, help="Record id or prefix.")],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the plan and the environment check; run nothing.")] = False,
    allow_env_drift: Annotated[bool, typer.Option(
        "--allow-env-drift", help="Run despite environment drift (recorded in the new "
                                  "record).")] = False,
    recipe: Annotated[Path | None, typer.Option(
        "--recipe", show_default=False,
        help="Run this recipe instead of the sealed one (try a change against the record).")]
    = None,
    models: Annotated[Path | None, typer.Option(
        "--models", help="Folder that ${REGISTRY_MODELS} names (default: the variable).")] = None,
    min_performance: Annotated[float, typer.Option(
        "--min-performance",
        help="Floor for new/sealed median decode rate: passed when its 95% interval lies at "
             "or above it.")] = 0.95,
    rounds: Annotated[int, typer.Option(
        "--rounds", min=1,
        help="Most passes of the suites on the new engine while the speed verdict is "
             "undecided; then inconclusive.")] = 5,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run directory (new or empty). Default: runs/<recipe>-reproduce-...")]
    = None,
    control: Annotated[str | None, typer.Option(
        "--control", show_default=False,
        help="A control record run in alternating starts with this one ('teacher': the "
             "lane's teacher); the speed is judged against it.")] = None,
    starts: Annotated[int, typer.Option(
        "--starts", min=1, help="With --control: engine starts of each before the first "
                                "look at the verdict, record first.")] = 2,
    max_starts: Annotated[int | None, typer.Option(
        "--max-starts", min=1, show_default=False,
        help="With --control: go on a pair at a time until the speed verdict is decided, "
             "at most this many starts of each (default: --starts, one look).")] = None,
    budget_minutes: Annotated[float | None, typer.Option(
        "--budget-minutes", show_default=False,
        help="With --control: start no further pair once this many minutes have passed.")]
    = None,
    home: HomeOpt = None,
    json: Json = False,
) -> None:
    """Re-run a sealed record, seal the new run (parent = the record) and judge it.

    Exit 0 when identity, contract and performance all pass; 1 when one fails; 6 when
    the environment drifted (refused before anything runs).

    Example: registry reproduce 3f2a9c --models ~/models
    """
    from registry.cli.exits import leave, reproduced, with_code
    from registry.cli.output import print_json
    from registry.cli.run import progress, term_as_interrupt
    from registry.reproduce import reproduce as reproduce_record

    found = find(home)
    with term_as_interrupt(), progress(json or dry_run) as bars:
        done = reproduce_record(found, record, recipe_path=recipe, models_dir=models,
                                out_dir=out, allow_env_drift=allow_env_drift,
                                min_performance=min_performance, max_rounds=rounds,
                                dry_run=dry_run, control=control, starts=starts,
                                max_starts=max_starts, budget_minutes=budget_minutes,
                                hooks=bars.hooks if bars else None,
                                progress=bars.hashed if bars else None)
    print_json(with_code(done, reproduced(done))) if json else _print(done)
    leave(reproduced(done))


def _print(done: Reproduction) -> None:
    from registry.cli.output import console, safe, table

    console.print(f"[bold]reproducing[/] {safe(done.original)}   recipe: {safe(done.recipe)}",
                  highlight=False, markup=True)
    if done.dry_run:
        from registry.cli.run import print_plan

        print_plan(done.plan)
        for line in _looks_lines(done) + _foreseen_lines(done):
            console.print(line, highlight=False)
    env = done.environment
    rows = [[f.name, _short(f.sealed), _short(f.now), "DRIFT" if f.drifted else f.state]
            for f in env.facts]
    console.print(table("environment (sealed vs now)", ["fact", "sealed", "now", ""], rows))
    if env.drift:
        console.print(f"drift: {', '.join(env.drift)}"
                      + (" (allowed: recorded in the new record)" if env.allowed else
                         " (refused, exit 6: --allow-env-drift runs despite it and records "
                         "it in the new record)"), highlight=False)
    if done.record is None:
        return
    console.print(f"new record {done.record} (parent {short_id(done.original)}), run "
                  f"{done.run_dir}",
                  highlight=False)
    for line in _verdict_lines(done):
        console.print(line, highlight=False)


def _verdict_lines(done: Reproduction) -> list[str]:
    assert done.identity and done.contract and done.performance
    i, c, p = done.identity, done.contract, done.performance
    lines = [f"identity    {_word(i.passed, i.judged)}: {i.compared} fields compared"
             + (f", not compared: {', '.join(i.not_compared)}" if i.not_compared else "")]
    lines += [f"  {d.name}: {_said(d.original)} -> {_said(d.new)}" for d in i.differences]
    lines += [f"  {d.name}: newly known: {_said(d.new)} (unknown when sealed; not drift)"
              for d in i.newly_known]
    lines.append(f"contract    {_word(c.passed, c.judged)}: {c.contract}"
                 + (f" ({c.note})" if c.note else ""))
    for v in c.verdicts:
        lines.append(f"  {v.status.value} vs {v.reference}: {v.rows_passed}/{v.rows_total} rows")
        lines += [f"    {reason}" for reason in v.reasons[:5]]
    lines += [f"  {problem}" for problem in c.problems]
    lines.append(f"performance {p.status.upper() if p.status in LOUD else p.status}: "
                 "95% interval of "
                 f"new/sealed median at least {p.min_ratio} ({p.rounds} of at most "
                 f"{p.max_rounds} rounds)")
    lines += [f"  {s.suite}: {s.status}: {s.detail} ({s.formula}; {s.rows_new} new and "
              f"{s.rows_original} sealed unflagged rows"
              + ("; SLOWER" if s.slower else "") + _flags(s) + ")" for s in p.suites]
    if done.host_speed is not None:
        lines.append(f"host        the speed probe ran at {done.host_speed:.3f} x its speed "
                     "when the record was sealed")
    if done.gpu is not None:
        g = done.gpu
        lines.append(f"gpu         {g.samples} samples, {g.busy} busy; SM clock at least "
                     f"{g.sm_mhz_min_busy} MHz while busy, at most {g.temperature_c_max} C, "
                     f"{g.power_w_max} W; " + (f"THROTTLED ({', '.join(g.throttled)}) from "
                                               f"{g.first_throttle}" if g.throttled else
                                               "no throttle reason"))
    lines += _controlled_lines(done)
    lines.append(("REPRODUCED" if done.passed else "NOT REPRODUCED")
                 + (f" (not judged: {', '.join(done.not_judged)})" if done.not_judged else ""))
    if done.verification:
        lines.append(f"verification {short_id(done.verification)} signed and committed")
    return lines


def _controlled_lines(done: Reproduction) -> list[str]:
    c = done.controlled
    if c is None:
        return []
    lines = [f"control     {short_id(c.control)}, starts {' '.join(c.order)}"]
    if c.stopped:
        lines.append(f"  stopped: {c.stopped} (at most {c.max_starts} a side; each look at "
                     f"{100 * (c.look_level or 0.95):.4g}%)")
    for s in c.suites:
        host = "-" if s.host_factor is None else f"{s.host_factor:.3f}"
        lines.append(f"  {s.suite}: the host ran at {host} x the control's sealed speed; "
                     f"uncontrolled verdict {c.uncontrolled.status}")
        if s.why is not None:
            lines.append(f"  {s.suite}: {s.why.status}: {s.why.reason}")
    bases = sorted({e.basis for e in c.evidence})
    if bases:
        lines.append(f"  disturbance judged on: {'; '.join(bases)}")
    return lines


def _looks_lines(done: Reproduction) -> list[str]:
    """A sequential plan: where it looks, how far it may go, each look's level."""
    p = done.looks
    if p is None or p.count == 1:
        return []
    budget = f", or until {p.budget_s / 60:g} minutes have passed" if p.budget_s else ""
    return [f"plan        first look after {p.first} starts a side, then after each pair up "
            f"to {p.most}{budget};", f"            each look at {100 * p.each:.4g}% (the "
            f"error spread over {p.count} looks)"]


def _foreseen_lines(done: Reproduction) -> list[str]:
    """What the planned controlled starts can decide, if they spread as the sealed ones."""
    lines = []
    for f in done.foreseen or []:
        if f.start_spread_pct is None or f.passes_above is None:
            lines.append(f"foreseen    {f.suite}: the sealed records have one start each: "
                         "no spread to foresee from")
            continue
        parity = (f"a ratio of 1.0 needs {f.starts_for_parity} a side" if f.starts_for_parity
                  else "no number of starts lets 1.0 pass: seal both over more")
        lines += [f"foreseen    {f.suite}: sealed starts {f.start_spread_pct:.1f}% apart; "
                  f"with {f.starts} a side it passes", f"            above a controlled "
                  f"ratio of {f.passes_above:.3f}; {parity}"]
    return lines


def _flags(s: SuitePerformance) -> str:
    return "".join(f"; {side} measurement {q}" for side, q in
                   (("sealed", s.quality_original), ("new", s.quality_new)) if q != "valid")


LOUD = {"failed", "inconclusive", "undecided"}


def _word(passed: bool, judged: bool = True) -> str:
    return "not judged" if not judged else "passed" if passed else "FAILED"


def _said(value: object) -> str:
    """A value as a user reads it: a missing one in words, never Python's None."""
    return "not recorded" if value is None else repr(value)


def _short(value: object) -> str:
    """A value whole (a digest or a version is never cut: formats/display.py); the table
    wraps it between words; a missing fact in words."""
    return "not recorded" if value is None else str(value)
