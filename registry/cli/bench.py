"""`registry bench-import`: a `vllm bench serve` result as a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from registry.cli.options import Json


def register(app: typer.Typer) -> None:
    app.command("bench-import")(bench_import)


def bench_import(
    result: Annotated[Path, typer.Argument(
        show_default=False, help="vllm bench serve --save-result --save-detailed JSON.")],
    log: Annotated[Path, typer.Option(
        "--log", show_default=False, help="The benchmarked server's vllm serve output.")],
    out: Annotated[Path, typer.Option("--out", show_default=False,
                                      help="Run directory to write (new or empty).")],
    suite: Annotated[str, typer.Option(help="Suite name of the rows.")] = "vllm-bench",
    recipe: Annotated[Path | None, typer.Option(
        "--recipe", show_default=False, help="Recipe file kept in the run directory.")] = None,
    json: Json = False,
) -> None:
    """Write a run directory from a vllm bench serve result; seal it with `registry seal`.

    Example: registry bench-import result.json --log serve.log --out runs/bench
    """
    from registry.cli.output import console, print_json, table
    from registry.measure.display import quality_lines, value_text
    from registry.measure.results import suite_results
    from registry.measure.vllm_bench import import_result

    bench = import_result(result, log, out, suite=suite, recipe=recipe)
    results = suite_results(bench, None)
    if json:
        print_json({"run_dir": str(out), "rows": len(bench.rows),
                    "results": [r.model_dump(mode="json") for r in results]})
        return
    console.print(f"run directory {out}: {len(bench.rows)} requests", highlight=False)
    for r in results:
        console.print(table(f"suite {r.suite}", ["metric", "value [95% CI]", "unit", "formula"], [
            [m.name, value_text(m, r.quality), m.unit, m.formula] for m in r.metrics.values()]))
    for line in quality_lines(results):
        console.print(line, highlight=False)
