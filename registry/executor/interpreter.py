"""The engine's Python: the interpreter that runs an engine started as `python -m ...`,
and the facts that interpreter reports about itself (its version, packages, the engine).

Chosen in this order (the first that is set wins):

1. `$REGISTRY_ENGINE_PYTHON`: this shell's choice, over a recipe written on another
   host (the recipe's digest stays the same);
2. the recipe's `[engine] python`;
3. the user's config file, `$XDG_CONFIG_HOME/registry/config.toml` (else
   `~/.config/registry/config.toml`), `[engine] python`: this host's default;
4. the interpreter that runs the registry.

A setting may start with `~` (the recipe's may also use `${VAR}`, expanded with the
recipe's other values), and must then name an executable file by an absolute path.
It is kept as given, never resolved through symlinks: a venv's `bin/python` is a link
to its base interpreter, and only the link starts the venv.

The facts come from running that interpreter on `pyfacts.py` (standard library only)
with the engine's own environment, never from the registry's process: an engine in
another venv has its own vLLM, torch and packages, and the record must say so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from registry.base.model import Frozen
from registry.base.safeload import BadDocument, loads_toml
from registry.engines.plugin import engine_for, plugins
from registry.errors import InvalidInput
from registry.executor import pyfacts
from registry.formats.rundir import EnginePackage

ENV_PYTHON = "REGISTRY_ENGINE_PYTHON"
CONFIG = Path("registry") / "config.toml"
PROBE_TIMEOUT_S = 120.0  # reading a large site-packages' metadata on a loaded host
# beside every engine's own distributions (their plug-ins name them)
PACKAGES = ["torch", "transformers", "tokenizers", "safetensors",
            "compressed-tensors", "triton", "intel-extension-for-pytorch", "oneccl-bind-pt",
            "flashinfer-python", "httpx", "pydantic", "serving-registry"]


class InterpreterFacts(Frozen):
    """What the engine's interpreter says about itself (pyfacts.py's output)."""

    executable: str
    prefix: str = Field(description="sys.prefix: the venv (or installation) it runs in")
    python: str
    implementation: str
    packages: dict[str, str] = Field(default_factory=dict, description="distribution -> version")
    engine_source: dict[str, Any] | None = Field(
        None, description="the engine's PEP 610 direct_url.json (source builds)")
    engine_package: EnginePackage | None = None


def config_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or Path.home())
                                                 / ".config")
    return Path(base) / CONFIG


def configured_python(path: Path) -> str | None:
    """`[engine] python` of the config file, or None when the file or the key is absent."""
    if not path.is_file():
        return None
    try:
        data = loads_toml(path.read_bytes())
    except (BadDocument, OSError) as e:
        raise InvalidInput(f"{path}: not a readable TOML config: {e}") from None
    engine = data.get("engine", {})
    value = engine.get("python") if isinstance(engine, dict) else None
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{path}: engine.python must be a path, got {value!r}")
    return value


def engine_python(recipe_python: str | None,
                  environ: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """The chosen setting and where it came from, or (None, "registry") when none is set
    (the registry's own interpreter then runs the engine)."""
    environ = os.environ if environ is None else environ
    config = config_path(environ)
    for value, source in ((environ.get(ENV_PYTHON), f"${ENV_PYTHON}"),
                          (recipe_python, "the recipe's engine.python"),
                          (configured_python(config), f"{config} engine.python")):
        if value:
            return checked(value, source), source
    return None, "registry"


def checked(value: str, source: str) -> str:
    """An absolute path to an executable file, `~` expanded."""
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        raise InvalidInput(f"{source}: {value!r} is not an absolute path",
                           hint="name the engine's interpreter, e.g. /opt/vllm/.venv/bin/python")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise InvalidInput(f"{source}: {path} is not an executable file",
                           hint="point it at the python of the environment that has the engine")
    return path


def probe(python: str | None, env: Mapping[str, str],
          engine: str | None = None) -> InterpreterFacts:
    """Run pyfacts.py in `python` (None: the registry's own) with the engine's `env`;
    `engine`: the engine's name (None: the engine of a plan that names none)."""
    executable = python or sys.executable
    plugin = engine_for(engine)
    every = [d for p in plugins().values() for d in p.distributions]
    argv = [executable, pyfacts.__file__, plugin.package or "", ",".join(plugin.distributions),
            *every, *PACKAGES]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(env),
                              timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InvalidInput(f"engine python {executable}: did not run: {e}") from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InvalidInput(f"engine python {executable}: exited {done.returncode} reading "
                           f"its own facts: {tail}",
                           hint="engine.python must be a Python 3 interpreter")
    try:
        return InterpreterFacts.model_validate(json.loads(done.stdout))
    except (ValueError, ValidationError):
        raise InvalidInput(f"engine python {executable}: printed no facts "
                           f"({done.stdout[:80]!r})") from None
