"""`registry recipe validate|show`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from registry.cli.app import new_app
from registry.cli.options import Json

recipe_app = new_app("Validate and show recipes.")



def register(app: typer.Typer) -> None:
    app.add_typer(recipe_app, name="recipe")


@recipe_app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Recipe files.", show_default=False)],
    json: Json = False,
) -> None:
    """Check recipes: schema, identity documents, conflicts, pins. Every file is checked;
    the exit code is the first failure's.

    Example: registry recipe validate recipes/*.toml
    """
    from registry.base.canonical import digest
    from registry.cli.output import console, print_error, print_json
    from registry.errors import RegistryError
    from registry.recipe import load_recipe

    results: list[dict[str, object]] = []
    failures: list[RegistryError] = []
    for path in paths:
        try:
            recipe = load_recipe(path)
        except RegistryError as e:
            failures.append(e)
            results.append({"path": str(path), "ok": False, "error": e.message, "hint": e.hint})
            if not json:
                print_error(e)
            continue
        sha256 = digest(recipe)
        results.append({"path": str(path), "ok": True, "lane": recipe.lane, "sha256": sha256})
        if not json:
            console.print(f"ok  {path}  {recipe.lane}  sha256:{sha256[:16]}", highlight=False)
    if json:
        print_json(results)
    if failures:
        raise typer.Exit(int(failures[0].exit_code))


@recipe_app.command()
def show(
    path: Annotated[Path, typer.Argument(help="Recipe file.", show_default=False)],
    json: Json = False,
) -> None:
    """Show the normalized recipe: identity documents merged, engine args derived.

    Example: registry recipe show recipes/tiny-bf16-kv.toml --json
    """
    from registry.base.canonical import digest
    from registry.cli.output import console, print_json, safe, table
    from registry.recipe import load_recipe

    recipe = load_recipe(path)
    if json:
        print_json({"recipe": recipe, "sha256": digest(recipe)})
        return
    p = recipe.precision
    console.print(f"[bold]{safe(recipe.name)}[/]  lane {safe(recipe.lane)}  "
                  f"sha256:{digest(recipe)}", markup=True)
    console.print(table("precision (each axis on its own)", ["axis", "declared"], [
        ["weights", p.weights], ["draft_weights", p.draft_weights],
        ["activations", p.activations], ["kv_cache", p.kv_cache],
        ["draft_kv_cache", p.draft_kv_cache],
    ]))
    console.print(table("engine args", ["argument", "value"],
                        [[k, v] for k, v in sorted(recipe.engine.args.items())]))


@recipe_app.command("check-packet")
def check_packet_cmd(
    path: Annotated[Path, typer.Argument(help="A packet folder or its compose.yaml.",
                                         show_default=False)],
    recipe: Annotated[Path | None, typer.Option(
        help="The recipe the packet must agree with (image digest, memory, swap).")] = None,
    launcher: Annotated[Path | None, typer.Option(
        help="The launcher whose always-forwarded --env names the packet must set.")] = None,
    profile: Annotated[list[str] | None, typer.Option(
        help="A profile the packet ships (repeat; default: its package.json says, else "
             "one-gpu and two-gpu).")] = None,
    json: Json = False,
) -> None:
    """Check a container packet as the lab's check-container-packet.py does, plus the
    host rule it lacks (swap equal to memory); with --recipe, a packet that contradicts
    the recipe is a mismatch. Each finding names whose rule it is. Exit 1 when anything
    is found.

    Example: registry recipe check-packet tests/data/lab-packets/qwen35-9b-w4a16-b70
    """
    from registry.cli.output import console, print_json, safe
    from registry.recipe import load_recipe
    from registry.recipe.packet import check_packet, forwarded_env

    wanted = forwarded_env(launcher) if launcher else set()
    result = check_packet(path, load_recipe(recipe) if recipe else None, wanted,
                          tuple(profile) if profile else None)
    if json:
        print_json(result.model_dump() | {"ok": result.ok, "lab_ok": result.lab_ok})
    else:
        for f in result.findings:
            console.print(f"FAIL {safe(f.service or '-')}: [{f.source}: {f.rule}] "
                          f"{safe(f.message)}", highlight=False, markup=False)
        verdict = "ok  " if result.lab_ok else "FAIL"
        console.print(f"{verdict} {safe(str(path))}: the lab's checker rules "
                      f"({', '.join(result.services)})", highlight=False, markup=False)
    if not result.ok:
        raise typer.Exit(1)
