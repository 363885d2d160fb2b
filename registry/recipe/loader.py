"""Load a recipe file: TOML -> identity documents merged -> validated -> normalized.

Normalization derives the full `vllm serve` argument map from the structured tables
(model, precision, parallel, draft) and refuses any argument that says otherwise, so
the normalized recipe's `engine.args` is exactly the engine's command line.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import warnings
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from registry.base.redaction import Redaction
from registry.base.safeload import BadDocument, loads_toml
from registry.base.secrets import findings, secret_name
from registry.engines import vllm
from registry.engines.llamacpp import args as llamacpp_args
from registry.errors import InvalidRecipe, RegistryWarning
from registry.recipe.options import smuggled, smuggled_problem
from registry.recipe.schema import GGMLCacheType, KVCacheDtype, Platform, Recipe

IDENTITY_SCHEMA = "registry.identity/v1"
ENV_KEY = re.compile(r"""\s*['"]?([A-Za-z_][A-Za-z0-9_.-]*)['"]?\s*=""")
IDENTITY_KINDS = {"model": "checkpoint", "draft": "checkpoint", "engine": "engine",
                  "hardware": "hardware", "suite": "suite"}
# Arguments the executor owns: it picks the address so runs never collide.
EXECUTOR_ARGS = {"host", "port", "model_tag"}


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


def kv_cache_arg(kv: KVCacheDtype | GGMLCacheType | None) -> str:
    """The `--kv-cache-dtype` value that asks vLLM for a declared KV precision (a vLLM
    recipe always declares one: the schema checks it)."""
    if kv is None:
        raise ValueError("a vLLM recipe declares precision.kv_cache")
    return "auto" if kv is KVCacheDtype.checkpoint else kv.value


def _derived_args(r: Recipe) -> dict[str, tuple[str, Any]]:
    """vLLM argument -> (the recipe key it comes from, value)."""
    model = r.model.path or r.model.hub_id
    out: dict[str, tuple[str, Any]] = {
        "model": ("model.path", model),
        "kv_cache_dtype": ("precision.kv_cache", kv_cache_arg(r.precision.kv_cache)),
        "tensor_parallel_size": ("parallel.tensor", r.parallel.tensor),
        "pipeline_parallel_size": ("parallel.pipeline", r.parallel.pipeline),
        "data_parallel_size": ("parallel.data", r.parallel.data),
    }
    if r.model.revision:
        out["revision"] = ("model.revision", r.model.revision)
    if r.precision.activations:
        out["dtype"] = ("precision.activations", r.precision.activations.value)
    if r.parallel.expert > 1:
        out["enable_expert_parallel"] = ("parallel.expert", True)
    if r.draft:
        spec: dict[str, Any] = {"method": r.draft.method,
                                "num_speculative_tokens": r.draft.num_speculative_tokens}
        if r.draft.path or r.draft.hub_id:
            spec["model"] = r.draft.path or r.draft.hub_id
        if r.draft.revision:
            spec["revision"] = r.draft.revision
        dkv = r.precision.draft_kv_cache
        if dkv is not None and dkv.value != "target":
            spec["kv_cache_dtype"] = dkv.value
        out["speculative_config"] = ("draft", {**r.draft.config, **spec})
    return out


def _agrees(name: str, declared: Any, given: Any) -> bool:
    if name == "kv_cache_dtype" and isinstance(given, str):
        return vllm.canonical_kv_dtype(given) == vllm.canonical_kv_dtype(declared)
    return bool(declared == given)


def normalize(recipe: Recipe, path: Path) -> Recipe:
    """Check engine args against the structured tables and fill the ones they imply."""
    found = smuggled(recipe.engine.args)
    if found is not None:
        raise InvalidRecipe(path, f"engine.args.{found[0]}", smuggled_problem(*found),
                            hint="give each engine option its own key in [engine.args]")
    args = (_llamacpp_args(recipe, path) if recipe.engine.name == "llama.cpp"
            else _vllm_args(recipe, path))
    _check_hardware(recipe, path)
    suites = [_pin_suite(recipe, i, path) for i in range(len(recipe.benchmark.suites))]
    return recipe.model_copy(update={
        "engine": recipe.engine.model_copy(update={"args": args}),
        "benchmark": recipe.benchmark.model_copy(update={"suites": suites}),
    })


def _llamacpp_args(recipe: Recipe, path: Path) -> dict[str, Any]:
    """llama-server's options under their long names; the model and the K and V cache
    types come from model.path and [precision]."""
    args, problems = llamacpp_args.normalize_args(recipe.engine.args)
    if problems:
        p = problems[0]
        raise InvalidRecipe(path, f"engine.args.{p.key}", p.message, hint=p.hint)
    k, v = recipe.precision.kv_cache_k, recipe.precision.kv_cache_v
    derived = {"model": ("model.path", recipe.model.path),
               "cache-type-k": ("precision.kv_cache_k", k.value if k else None),
               "cache-type-v": ("precision.kv_cache_v", v.value if v else None)}
    for name, (source, value) in derived.items():
        given = args.get(name)
        if given is not None and (llamacpp_args.kv_type_arg(given) if name != "model"
                                  else given) != value:
            raise InvalidRecipe(path, f"engine.args.{name}",
                                f"{given!r} conflicts with {source} ({value!r})",
                                hint=f"declare it once, in {source}")
        if value is not None:
            args[name] = value
    return args


def _vllm_args(recipe: Recipe, path: Path) -> dict[str, Any]:
    """Each argument checked against the argument table of the recipe's engine release
    (registry.engines.vllm.table_for: the nearest lower one shipped, said in a warning,
    when that release's own is not)."""
    args = dict(recipe.engine.args)
    known = set(recipe.engine.custom_args)
    version = recipe.engine.version
    chosen = vllm.table_for(version)
    if chosen.note and args:
        _warn_once(chosen.note)
    for name in args:
        if "-" in name:
            raise InvalidRecipe(path, f"engine.args.{name}",
                                "engine args use vLLM's snake_case names",
                                hint=f"write {name.replace('-', '_')!r}")
        if name in EXECUTOR_ARGS:
            raise InvalidRecipe(path, f"engine.args.{name}", "the executor chooses this argument",
                                hint="remove it from the recipe")
        if not vllm.is_known_arg(name, version) and name not in known:
            close = difflib.get_close_matches(name, list(vllm.arg_table(version)), n=1)
            raise InvalidRecipe(
                path, f"engine.args.{name}", f"not a {chosen.label} `vllm serve` argument"
                + (f"; did you mean {close[0]!r}?" if close else ""),
                hint="a patched engine's own arguments go in engine.custom_args"
                     + ("" if version else "; engine.version names the release to check "
                        "against"),
            )
        problem = vllm.arg_problem(name, args[name], version)
        if problem:
            raise InvalidRecipe(path, f"engine.args.{name}", problem,
                                hint=f"write it as {chosen.label}'s argument table types it "
                                     "(true/false, a number, a table)")
    for name, (source, value) in _derived_args(recipe).items():
        if name in args and not _agrees(name, value, args[name]):
            raise InvalidRecipe(
                path, f"engine.args.{name}",
                f"{args[name]!r} conflicts with {source} (which means {name} = {value!r})",
                hint=f"declare it once, in {source}",
            )
        args.setdefault(name, value)
    return args


_WARNED: set[str] = set()  # one warning a process: a command may load a recipe twice


def _warn_once(note: str) -> None:
    if note not in _WARNED:
        _WARNED.add(note)
        warnings.warn(note, RegistryWarning, stacklevel=3)


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
