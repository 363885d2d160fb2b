"""Load a recipe file: TOML -> identity documents merged -> validated -> normalized.

Normalization is the engine's (its plug-in's `normalize_args`): it derives the full
argument map from the structured tables (model, precision, parallel, draft) and refuses
any argument that says otherwise, so the normalized recipe's `engine.args` is exactly
the engine's command line.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from registry.base.redaction import Redaction
from registry.base.safeload import BadDocument, loads_toml
from registry.base.secrets import findings, secret_name
from registry.engines.plugin import engine_for
from registry.errors import InvalidRecipe
from registry.recipe.options import smuggled, smuggled_problem
from registry.recipe.schema import Platform, Recipe

IDENTITY_SCHEMA = "registry.identity/v1"
ENV_KEY = re.compile(r"""\s*['"]?([A-Za-z_][A-Za-z0-9_.-]*)['"]?\s*=""")
IDENTITY_KINDS = {"model": "checkpoint", "draft": "checkpoint", "engine": "engine",
                  "hardware": "hardware", "suite": "suite"}


def load_recipe(path: str | Path) -> Recipe:
    path = Path(path)
    raw = read_toml(path)
    digests = _merge_identities(raw, path)
    recipe = validate(raw, path)
    if digests:
        recipe = recipe.model_copy(update={"identities": {**recipe.identities, **digests}})
    return normalize(recipe, path)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidRecipe(path, None, "no such file") from None
    except OSError as e:
        raise InvalidRecipe(path, None, f"cannot read: {e.strerror}") from None
    _no_secret(data.decode("utf-8", "replace"), path)
    try:
        return loads_toml(data)
    except BadDocument as e:
        hint = "each key may appear once per table" if "overwrite" in str(e) else None
        raise InvalidRecipe(path, None, str(e), hint=hint) from None


def _no_secret(text: str, path: Path) -> None:
    """A recipe is sealed whole and shared: a secret in it, or a secret's name in
    [engine.env] even as a ${VAR} (the plan would hold its value), is refused, naming
    the line. Runs never download (HF_HUB_OFFLINE=1): no engine needs a token."""
    found = findings(text, str(path))
    if not found:
        found = [Redaction(file=str(path), line=n, kind="name", why=f"{m.group(1)} is a "
                           "secret's name; its value would be written into the launch plan")
                 for n, line in enumerate(text.splitlines(), 1)
                 if (m := ENV_KEY.match(line)) and secret_name(m.group(1))]
    if found:
        f = found[0]
        raise InvalidRecipe(f"{f.file}:{f.line}", None, f"holds a secret ({f.why}); a recipe "
                            "is sealed and shared, so it is refused",
                            hint="take the value out of the recipe; keep secrets in the "
                                 "environment, never in a file that is sealed")


def validate(raw: dict[str, Any], path: Path) -> Recipe:
    if raw.get("schema") != "registry.recipe/v1":
        raise InvalidRecipe(
            path, "schema", f"expected 'registry.recipe/v1', got {raw.get('schema')!r}",
            hint='the first line of a recipe is schema = "registry.recipe/v1"',
        )
    try:
        return Recipe.model_validate(raw)
    except ValidationError as e:
        # an unknown key is the cause of the missing one it misspells (`kv_cahce`)
        errors = e.errors()
        err = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
        key = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        problem = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            problem = "unknown field" + _did_you_mean(err["loc"], raw)
        more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
        raise InvalidRecipe(path, key or None, problem + more) from None


def _did_you_mean(loc: tuple[Any, ...], raw: dict[str, Any]) -> str:
    from registry.recipe import schema

    tables: dict[str, type[Any]] = {
        "": schema.Recipe, "model": schema.ModelSpec, "draft": schema.DraftSpec,
        "precision": schema.PrecisionSpec, "parallel": schema.ParallelSpec,
        "engine": schema.EngineSpec, "hardware": schema.HardwareSpec,
        "benchmark": schema.BenchmarkSpec, "quality": schema.QualitySpec,
    }
    model = tables.get(str(loc[0]) if len(loc) > 1 else "")
    if model is None:
        return ""
    names = [f.alias or n for n, f in model.model_fields.items()]
    close = difflib.get_close_matches(str(loc[-1]), names, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _find_identity(ref: str, recipe_path: Path) -> Path:
    for folder in [recipe_path.resolve().parent, *recipe_path.resolve().parents]:
        candidate = folder / "identities" / f"{ref}.toml"
        if candidate.is_file():
            return candidate
    raise InvalidRecipe(
        recipe_path, None, f"identity document {ref!r} not found",
        hint=f"expected identities/{ref}.toml in the recipe's folder or one above it",
    )


def _merge_identities(raw: dict[str, Any], path: Path) -> dict[str, str]:
    """Fill tables from the identity documents they reference; return ref -> sha256."""
    digests: dict[str, str] = {}
    tables: list[tuple[str, str, dict[str, Any]]] = [
        (key, key, raw[key]) for key in ("model", "draft", "engine", "hardware")
        if isinstance(raw.get(key), dict)
    ]
    benchmark = raw.get("benchmark")
    suites = benchmark.get("suites", []) if isinstance(benchmark, dict) else []
    tables += [(f"benchmark.suites.{i}", "suite", suite) for i, suite in enumerate(suites)
               if isinstance(suite, dict)]
    for where, role, table in tables:
        ref = table.get("identity")
        if not isinstance(ref, str):
            continue
        doc_path = _find_identity(ref, path)
        doc = read_toml(doc_path)
        kind = IDENTITY_KINDS[role]
        if doc.get("schema") != IDENTITY_SCHEMA or doc.get("kind") != kind:
            raise InvalidRecipe(path, f"{where}.identity",
                                f"{doc_path} is not a {kind} identity document "
                                f"(schema {IDENTITY_SCHEMA}, kind {kind!r})")
        for key, value in doc.get("fields", {}).items():
            if key in table and table[key] != value:
                raise InvalidRecipe(
                    path, f"{where}.{key}",
                    f"{table[key]!r} conflicts with {doc_path.name}: fields.{key} = {value!r}",
                    hint="remove one of the two, or make them agree",
                )
            table.setdefault(key, value)
        digests[ref] = hashlib.sha256(doc_path.read_bytes()).hexdigest()
    return digests


def normalize(recipe: Recipe, path: Path) -> Recipe:
    """Check engine args against the structured tables and fill the ones they imply."""
    found = smuggled(recipe.engine.args)
    if found is not None:
        raise InvalidRecipe(path, f"engine.args.{found[0]}", smuggled_problem(*found),
                            hint="give each engine option its own key in [engine.args]")
    args = engine_for(recipe.engine.name).normalize_args(recipe, path)
    _check_hardware(recipe, path)
    suites = [_pin_suite(recipe, i, path) for i in range(len(recipe.benchmark.suites))]
    return recipe.model_copy(update={
        "engine": recipe.engine.model_copy(update={"args": args}),
        "benchmark": recipe.benchmark.model_copy(update={"suites": suites}),
    })


def _check_hardware(r: Recipe, path: Path) -> None:
    if r.hardware.platform is not Platform.cpu and r.parallel.world_size > r.hardware.count:
        raise InvalidRecipe(
            path, "parallel",
            f"needs {r.parallel.world_size} devices (tensor x pipeline x data) but "
            f"hardware.count = {r.hardware.count}",
        )


def suite_path(recipe_path: Path, suite_file: str) -> Path:
    return (recipe_path.parent / suite_file).resolve()


def _pin_suite(r: Recipe, index: int, path: Path) -> Any:
    suite = r.benchmark.suites[index]
    if not suite.path or "${" in suite.path:
        return suite
    file = suite_path(path, suite.path)
    if not file.is_file():
        return suite  # the run checks presence; validation only checks what is here
    actual = hashlib.sha256(file.read_bytes()).hexdigest()
    if suite.sha256 and suite.sha256 != actual:
        raise InvalidRecipe(
            path, f"benchmark.suites.{index}.sha256",
            f"{suite.path} has sha256 {actual}, the recipe pins {suite.sha256}",
            hint="the suite changed: restore it, or pin the new digest deliberately",
        )
    return suite.model_copy(update={"sha256": actual})
