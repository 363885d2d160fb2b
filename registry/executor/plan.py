"""Recipe + platform profile -> launch plan. Pure: no process, and no file system but
the check that a configured engine interpreter exists.

The normalized recipe's `engine.args` is the engine's complete argument map; the plan
adds only what the executor owns: the engine plug-in's start command, host and port,
private caches.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registry.engines.plugin import engine_for
from registry.errors import InvalidInput
from registry.executor.container import container_argv, launch_of
from registry.executor.interpreter import engine_python
from registry.executor.launcher import launcher_path
from registry.executor.profiles import PlatformProfile, profile_for
from registry.formats.rundir import LaunchPlan
from registry.recipe.options import repeated, smuggled, smuggled_problem
from registry.recipe.schema import ContainerSpec, Recipe

MODELS_VAR = "REGISTRY_MODELS"
HOST = "127.0.0.1"
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def variables(models_dir: Path | None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What `${VAR}` expands to: REGISTRY_MODELS from `models_dir`, else the environment."""
    found = dict(os.environ if environ is None else environ)
    if models_dir is not None:
        found[MODELS_VAR] = str(models_dir)
    return found


def expand(value: Any, found: Mapping[str, str], key: str) -> Any:
    """`${VAR}` in every string of `value` (nested dicts and lists too)."""
    if isinstance(value, dict):
        return {k: expand(v, found, f"{key}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, found, f"{key}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in found:
            hint = ("pass --models DIR or set REGISTRY_MODELS" if name == MODELS_VAR
                    else f"set {name} in the environment")
            raise InvalidInput(f"{key}: ${{{name}}} is not set", hint=hint)
        return found[name]

    return VAR_RE.sub(one, value)


def _env(recipe: Recipe, profile: PlatformProfile, found: Mapping[str, str],
         cache_dirs: dict[str, str]) -> dict[str, str]:
    clash = sorted(set(recipe.engine.env) & set(cache_dirs))
    if clash:
        raise InvalidInput(f"engine.env.{clash[0]}: the executor gives every run private caches",
                           hint="remove it from the recipe; runs start cold by design")
    env = dict(profile.env)
    if profile.device_mask:
        env[profile.device_mask] = _devices(profile.device_mask, recipe.hardware.count, found)
    env |= cache_dirs
    env["HF_HUB_OFFLINE"] = "1"  # weights come from local paths, never a download mid-run
    env |= expand(recipe.engine.env, found, "engine.env")
    return env


def _devices(mask: str, count: int, found: Mapping[str, str]) -> str:
    """The first `count` devices of the caller's own mask when it sets one (a shared host
    hands each job its devices), else devices 0 .. count-1."""
    given = [d.strip() for d in found.get(mask, "").split(",") if d.strip()]
    if not given:
        return ",".join(str(i) for i in range(count))
    if len(given) < count:
        raise InvalidInput(f"hardware.count is {count} but {mask}={found[mask]} lists "
                           f"{len(given)}", hint=f"set {mask} to {count} devices or unset it")
    return ",".join(given[:count])


def plan(recipe: Recipe, platform: PlatformProfile | None = None, *, port: int,
         models_dir: Path | None, cwd: Path, cache_root: Path,
         environ: Mapping[str, str] | None = None,
         recipe_dir: Path | None = None) -> LaunchPlan:
    """The launch plan for a normalized recipe: argv, env, cwd, port, private caches; a
    launcher (relative to `recipe_dir`, default `cwd`) runs the engine's argv after its
    own arguments; a container runs it as its command."""
    profile = platform or profile_for(recipe.hardware.platform)
    found = variables(models_dir, environ)
    args = expand(dict(recipe.engine.args), found, "engine.args")
    cache_dirs = {var: str(cache_root / var.lower()) for var in profile.cache_vars}
    engine = engine_for(recipe.engine.name)
    container = recipe.engine.container
    command = profile.command or (engine.container_command() if container
                                  else engine.start_command(recipe.engine.version, found))
    found_option = smuggled(args)  # a ${VAR} may expand to one
    if found_option is not None:
        raise InvalidInput(f"engine.args.{found_option[0]}: {smuggled_problem(*found_option)}",
                           hint="give each engine option its own key in [engine.args]")
    argv = [*command, *engine.render_argv(args, recipe.engine.version),
            *engine.serve_args(HOST, port)]
    twice = repeated(argv)  # the engine's own line, before a launcher or container wraps it
    if twice is not None:
        raise InvalidInput(f"the launch plan would pass {twice} twice: {shlex.join(argv)}",
                           hint="declare each engine option once: in its own table "
                                "([precision], [parallel]) or in [engine.args]")
    env = _env(recipe, profile, found, cache_dirs)
    python = _python(recipe, argv, found)
    launch = LaunchPlan(platform=profile.name.value, argv=argv, env=env, cwd=str(cwd),
                        host=HOST, port=port, cache_dirs=cache_dirs, engine=engine.name,
                        python=python)
    if recipe.engine.launcher:
        path = launcher_path(expand(recipe.engine.launcher, found, "engine.launcher"),
                             recipe_dir or cwd)
        launcher_argv = [str(path), *expand(recipe.engine.launcher_args, found,
                                            "engine.launcher_args")]
        if python:  # the launcher gets the engine's interpreter by its path
            argv = [python, *argv[1:]]
        stop = recipe.engine.stop
        if stop and stop.command:
            stop = stop.model_copy(update={"command": expand(stop.command, found,
                                                             "engine.stop.command")})
        return launch.model_copy(update={"argv": [*launcher_argv, "--", *argv],
                                         "launcher": str(path), "stop": stop,
                                         "python": None})
    if container:
        return _in_container(launch, container, found, cache_root)
    return launch


def _in_container(launch: LaunchPlan, spec: ContainerSpec, found: Mapping[str, str],
                  cache_root: Path) -> LaunchPlan:
    """The plan's argv as a container's command; the container's env joins the plan's."""
    env = {**launch.env, **expand(spec.env, found, "engine.container.env")}
    model = model_path(launch)
    engine_argv = list(launch.argv)
    if model:  # the container has no working directory of ours: the model by its full path
        model = str(Path(launch.cwd) / model)
        engine_argv[engine_argv.index("--model") + 1] = model
    name = "registry-" + re.sub(r"[^A-Za-z0-9_.-]", "-", f"{launch.port}-{cache_root.name}")
    cidfile = str(cache_root / "container.id")
    argv = container_argv(spec, engine_argv, name=name, port=launch.port, env=env, model=model,
                          mounts=expand(spec.mounts, found, "engine.container.mounts"),
                          platform=launch.platform, cidfile=cidfile)
    return launch.model_copy(update={"argv": argv, "env": env,
                                     "container": launch_of(spec, name, cidfile)})


def _python(recipe: Recipe, argv: list[str], found: Mapping[str, str]) -> str | None:
    """The engine's interpreter when a setting names one and the command is `python`
    (a binary such as llama-server is found on PATH)."""
    if argv[0] != "python":
        return None
    declared = expand(recipe.engine.python, found, "engine.python")
    return engine_python(declared, found)[0]


def preview(recipe: Recipe, *, port: int, models_dir: Path | None, cwd: Path,
            recipe_dir: Path | None = None) -> LaunchPlan:
    """The plan a dry run prints: a run makes its own fresh cache root when it starts."""
    cache_root = Path(tempfile.gettempdir()) / "registry-run-cache-XXXXXXXX"
    return plan(recipe, port=port, models_dir=models_dir, cwd=cwd, cache_root=cache_root,
                recipe_dir=recipe_dir)


def model_path(launch: LaunchPlan) -> str | None:
    """The `--model` value of a plan."""
    argv = launch.argv
    return argv[argv.index("--model") + 1] if "--model" in argv[:-1] else None
