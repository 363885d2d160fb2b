"""`registry resolve RUN_DIR`: what the run really was, each field with its evidence."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from registry.cli.options import HomeOpt, Json, find
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.formats.identity import ResolvedIdentity

STATUS_STYLE = {"confirmed": "green", "mismatch": "bold red", "unresolved": "yellow",
                "undeclared": "cyan"}


def register(app: typer.Typer) -> None:
    app.command()(resolve)


# a record id or prefix; anything else is a run directory's path (a missing one: exit 4)
RECORD_ID = re.compile(r"[0-9a-fA-F]{1,64}")


def resolve(
    target: Annotated[str, typer.Argument(
        show_default=False, metavar="RUN_DIR|RECORD",
        help="Run directory, or a record id (prefix) to re-resolve from its sealed evidence.")],
    recipe: Annotated[Path | None, typer.Option(
        "--recipe", show_default=False,
        help="Recipe file (default: the run's recipe.json or recipe.toml).")] = None,
    checkpoint: Annotated[Path | None, typer.Option(
        "--checkpoint", show_default=False,
        help="Checkpoint dir or config.json (default: the recipe's, else the log's model path "
             "when it exists).")] = None,
    draft_checkpoint: Annotated[Path | None, typer.Option(
        "--draft-checkpoint", show_default=False,
        help="Draft checkpoint dir or config.json (default: as for --checkpoint).")] = None,
    log: Annotated[Path | None, typer.Option(
        "--log", show_default=False,
        help="Engine log, relative to the run directory or a path (default: server.log, else "
             "the one *server*.log, *.stdout.log, *server*.txt or *vllm*.log).")] = None,
    json: Json = False,
    home: HomeOpt = None,
) -> None:
    """Resolve a run's identity from its evidence: engine log, checkpoint, metrics.
    Given a RECORD instead, re-run the resolver on the record's own sealed evidence (no
    checkpoint on disk needed) and compare every field with the signed identity: exit
    0 when every field is reproduced, 1 when one differs.

    Every field shows the declared value, the value the evidence proves, a status
    (confirmed, mismatch, unresolved, undeclared), the rule that decided and, with
    --json, the evidence (file, line, text).

    Example: registry resolve runs/tiny-checkpoint-kv --checkpoint ~/models/tiny-llama-kv-fp8
    Example: registry resolve capsule/arm-a/run --log server.stdout.log
    Example: registry resolve 3f2a9c --json
    """
    from registry.cli.output import print_json
    from registry.resolve import resolve_run

    run_dir = Path(target)
    if not run_dir.is_dir() and not any((recipe, checkpoint, draft_checkpoint, log)) and \
            RECORD_ID.fullmatch(target):
        _record(target, home, json)
        return
    identity = resolve_run(run_dir, recipe_path=recipe, checkpoint=checkpoint,
                           draft_checkpoint=draft_checkpoint, log_path=log)
    if json:
        print_json(identity)
    else:
        show(identity)


def show(identity: ResolvedIdentity) -> None:
    from rich.text import Text

    from registry.cli.output import console, safe, table

    rows = [[name, _text(f.declared), _text(f.resolved) + (" *" if f.self_reported else ""),
             Text(f.status.value, style=STATUS_STYLE[f.status.value]), f.rule or ""]
            for name, f in identity.fields.items()]
    # names and statuses stay whole; values and the rule text wrap
    console.print(table("resolved identity", ["field", "declared", "resolved", "status", "rule"],
                        rows, keep=[True, False, False, True, False]))
    console.print("* self-reported: the engine says so about itself", style="dim")
    if identity.expect:
        console.print(table("expect markers", ["marker", "passed", "detail"], [
            [e.name, "yes" if e.passed else Text("NO", style="bold red"), e.detail]
            for e in identity.expect]))
    spec = identity.spec_decode
    if spec:
        per_cycle = f", {spec.emitted_per_cycle:.3f} tokens per draft cycle" \
            if spec.emitted_per_cycle else ""
        console.print(f"speculative decoding ({spec.source}): acceptance "
                      f"{spec.acceptance_rate:.4f} ({spec.accepted_tokens}/{spec.draft_tokens})"
                      f"{per_cycle}", highlight=False)
    if identity.kv_usage_peak is not None:
        console.print(f"peak KV cache usage: {identity.kv_usage_peak}%", highlight=False)
    for error in identity.errors:
        console.print(f"[red]error[/] {safe(error.source)}:{error.line}: {safe(error.text)}",
                      highlight=False, markup=True)
    for note in identity.notes:
        console.print(f"note: {note}", highlight=False, style="dim")
    mismatches = identity.mismatches()
    if mismatches:
        console.print(f"[bold red]mismatch:[/] {safe(', '.join(mismatches))}", highlight=False,
                      markup=True)


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "[]"
    return str(value)


def _record(prefix: str, home: Path | None, json: bool) -> None:
    from rich.text import Text

    from registry.cli.exits import leave, reresolved
    from registry.cli.output import console, print_json, table
    from registry.review.reresolve import reresolve_record

    report = reresolve_record(find(home), prefix)
    if json:
        # null values stay: `again` None says the field re-resolved to nothing
        print_json({**report.model_dump(mode="json"), "reproduced": report.reproduced,
                    "exit_code": int(reresolved(report))})
    else:
        console.print(table(f"record {short_id(report.id)} re-resolved from its sealed evidence",
                            ["field", "signed", "again", "status", ""], [
            [f.name, _text(f.signed), _text(f.again), f.status or "-",
             Text("same", style="green") if f.same else Text("DIFFERS", style="bold red")]
            for f in report.fields]))
        used = ", ".join(report.evidence) or "none (sealed before checkpoint evidence)"
        console.print(f"checkpoint evidence: {used}", highlight=False, style="dim")
        same = sum(f.same for f in report.fields)
        console.print(f"{same}/{len(report.fields)} fields reproduced", highlight=False,
                      style=None if report.reproduced else "bold red")
    leave(reresolved(report))
