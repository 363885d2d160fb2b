"""An engine option smuggled in as a value (issue 34, weakness 10): refused by `recipe
validate` and by `run --dry-run`, naming the field; a plan never passes one option twice."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from registry.errors import ExitCode, InvalidInput
from registry.executor.plan import plan
from registry.recipe import load_recipe
from registry.recipe.options import repeated
from tests.conftest import ROOT

SMUGGLED = 'served_model_name = ["tiny", "--kv-cache-dtype", "fp8"]\n'


def smuggling_recipe(tmp_path: Path, line: str = SMUGGLED) -> Path:
    shutil.copytree(ROOT / "recipes" / "suites", tmp_path / "suites")
    text = (ROOT / "recipes" / "tiny-bf16-kv.toml").read_text()
    path = tmp_path / "smuggle.toml"
    path.write_text(text.replace("[engine.args]\n", "[engine.args]\n" + line))
    return path


def test_recipe_validate_refuses_an_option_in_a_list_value(cli, tmp_path) -> None:
    r = cli("recipe", "validate", smuggling_recipe(tmp_path))
    assert r.exit_code == ExitCode.INVALID_INPUT, r.stdout
    assert "engine.args.served_model_name" in r.stderr and "'--kv-cache-dtype'" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("line", [SMUGGLED, 'served_model_name = "-tp"\n'])
def test_a_dry_run_refuses_an_option_in_a_value(cli, tmp_path, line) -> None:
    r = cli("run", smuggling_recipe(tmp_path, line), "--dry-run", "--json", "--models", tmp_path)
    assert r.exit_code == ExitCode.INVALID_INPUT and r.stdout == ""
    assert "engine.args.served_model_name" in r.stderr


def test_a_negative_number_is_a_value(cli, tmp_path) -> None:
    r = cli("run", smuggling_recipe(tmp_path, 'served_model_name = ["tiny", "-1"]\n'),
            "--dry-run", "--json", "--models", tmp_path)
    assert r.exit_code == 0, r.stderr


def test_a_plan_never_passes_one_option_twice(tmp_path) -> None:
    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    for extra in ({"served_model_name": ["tiny", "--kv-cache-dtype", "fp8"]},
                  {"kv-cache-dtype": "fp8"}):  # past the loader: the plan checks again
        bad = recipe.model_copy(update={"engine": recipe.engine.model_copy(
            update={"args": {**recipe.engine.args, **extra}})})
        refused = r"engine\.args\.served_model_name|--kv-cache-dtype twice"
        with pytest.raises(InvalidInput, match=refused):
            plan(bad, port=1, models_dir=tmp_path, cwd=tmp_path, cache_root=tmp_path, environ={})


def test_repeated_counts_the_negative_form_as_the_same_option() -> None:
    assert repeated(["python", "--a", "1", "--no-a"]) == "--a"
    assert repeated(["--a=1", "--b", "-1", "--a"]) == "--a"
    assert repeated(["--a", "1", "--b", "-1"]) is None
