"""Prompt suites: JSONL files of `{"id", "prompt"}`, checked against the recipe's pin.

A suite's sha256 is part of a run's identity, so a file that differs from its pin is
refused before anything runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field

from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.errors import InvalidInput
from registry.executor.plan import expand
from registry.recipe.schema import Recipe, SuiteSpec


class Prompt(Frozen):
    id: str
    prompt: str
    prompt_class: str | None = Field(
        None, description="the task class (prose, code, ...): the lab's final gate weighs "
                          "each class the same")

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()


class Suite(Frozen):
    name: str
    path: str
    sha256: str
    max_tokens: int
    prompts: list[Prompt]
    data: bytes = Field(exclude=True, repr=False, description="the file's bytes, as pinned")


def load_suites(recipe: Recipe, recipe_dir: Path, found: Mapping[str, str]) -> list[Suite]:
    return [load_suite(recipe, i, recipe_dir, found) for i in range(len(recipe.benchmark.suites))]


def load_suite(recipe: Recipe, index: int, recipe_dir: Path, found: Mapping[str, str]) -> Suite:
    spec = recipe.benchmark.suites[index]
    key = f"benchmark.suites.{index}"
    if not spec.path:
        raise InvalidInput(f"{key}: suite {spec.name!r} has no path",
                           hint="give the suite file's path, or an identity document with one")
    path = recipe_dir / expand(spec.path, found, f"{key}.path")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidInput(f"{key}.path: {path}: {e.strerror or 'cannot read'}") from None
    actual = hashlib.sha256(data).hexdigest()
    if spec.sha256 and spec.sha256 != actual:
        raise InvalidInput(f"{key}.sha256: {path} has sha256 {actual}, "
                           f"the recipe pins {spec.sha256}",
                           hint="the suite changed: restore it, or pin the new digest deliberately")
    prompts = parse_prompts(data, path)
    if spec.prompts is not None and spec.prompts != len(prompts):
        raise InvalidInput(f"{key}.prompts: {path} holds {len(prompts)} prompts, "
                           f"the recipe expects {spec.prompts}")
    return Suite(name=spec.name, path=spec.path, sha256=actual, prompts=prompts,
                 max_tokens=_max_tokens(spec, recipe), data=data)


def _max_tokens(spec: SuiteSpec, recipe: Recipe) -> int:
    return spec.max_tokens or recipe.benchmark.max_tokens


def parse_prompts(data: bytes, path: Path) -> list[Prompt]:
    """One `{"id": str, "prompt": str}` object per line (`"prompt_class": str` optional);
    ids unique; no blank lines."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text") from None
    prompts: list[Prompt] = []
    for number, line in enumerate(lines, 1):
        try:
            prompts.append(Prompt.model_validate(loads_json(line)))
        except ValueError:  # bad JSON or a ValidationError
            raise InvalidInput(f"{path}:{number}: expected a JSON object with string "
                               '"id" and "prompt" (and an optional "prompt_class"; nothing '
                               "else)") from None
    ids = [p.id for p in prompts]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InvalidInput(f"{path}: prompt id {dup!r} appears more than once")
    if not prompts:
        raise InvalidInput(f"{path}: no prompts")
    return prompts
