"""vLLM argument tables per engine release: a recipe's `engine.args` are checked against
the table of its `engine.version` (the nearest lower one shipped, with a warning, when
that release has none), and the shipped tables are what tools/vllm_args.py reads from
vLLM's own parser."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from registry.engines.vllm import args as vllm
from registry.engines.vllm import recipe as vllm_recipe
from registry.errors import ExitCode, InvalidRecipe, RegistryWarning
from registry.recipe import load_recipe
from tests.conftest import ROOT
from tests.recipe_factory import MINIMAL

TABLES = ROOT / "registry" / "engines" / "vllm"


def recipe(tmp_path: Path, version: str | None, args: str) -> Path:
    engine = "[engine]\n" + (f'version = "{version}"\n' if version else "")
    path = tmp_path / "r.toml"
    path.write_text(MINIMAL + "\n" + engine + "[engine.args]\n" + args + "\n")
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "prompt": "hi"}\n')
    return path


def load_quietly(path: Path) -> list[str]:
    """Load the recipe; the RegistryWarnings it gave."""
    vllm_recipe._WARNED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_recipe(path)
    return [str(w.message) for w in caught if issubclass(w.category, RegistryWarning)]


def test_the_shipped_tables_are_the_releases_the_recipes_pin() -> None:
    assert vllm.releases() == ((0, 25), (0, 32))
    for found in vllm.releases():
        name = f"{found[0]}.{found[1]}"
        table = json.loads((TABLES / f"vllm_args_{name}.json").read_text())
        assert table["version"].startswith(name + ".") and table["engine"] == "vllm"
    engines = [load_recipe(p).engine for p in sorted((ROOT / "recipes").glob("*.toml"))]
    pinned = {e.version for e in engines if e.name == "vllm" and e.version}
    assert pinned == {"0.25.0", "0.32.0"}
    assert [vllm.table_for(v).note for v in pinned] == [None, None]  # each has its own


# calculate_kv_scales: 0.25 has it, 0.32 dropped it; max_num_scheduled_tokens: new in 0.32
@pytest.mark.parametrize(("arg", "has", "lacks"), [
    ("calculate_kv_scales = true", "0.25.0", "0.32.0"),
    ("max_num_scheduled_tokens = 64", "0.32.0", "0.25.0"),
])
def test_an_argument_of_one_release_is_refused_under_another(tmp_path, arg, has, lacks) -> None:
    name = arg.split(" ")[0]
    assert load_quietly(recipe(tmp_path, has, arg)) == []
    with pytest.raises(InvalidRecipe) as caught:
        load_recipe(recipe(tmp_path, lacks, arg))
    release = ".".join(lacks.split(".")[:2])
    assert caught.value.key == f"engine.args.{name}"
    assert f"not a vLLM {release} `vllm serve` argument" in caught.value.message


def test_a_value_is_typed_by_its_releases_table(tmp_path) -> None:
    # the same key and kind in both: a string where a yes/no belongs is refused by each
    for version in ("0.25.0", "0.32.0"):
        with pytest.raises(InvalidRecipe, match="expected true or false"):
            load_recipe(recipe(tmp_path, version, 'enable_prefix_caching = "false"'))


@pytest.mark.parametrize(("version", "used", "why"), [
    ("0.25.1", (0, 25), None),  # a patch release shares its minor release's table
    ("0.27.2rc1", (0, 25), "the nearest lower release shipped"),
    ("0.33.0", (0, 32), "the nearest lower release shipped"),
    ("0.10.2", (0, 25), "the oldest shipped"),
    (None, (0, 32), None),  # no version declared: the newest, silently
])
def test_the_table_is_the_nearest_lower_release(tmp_path, version, used, why) -> None:
    chosen = vllm.table_for(version)
    assert chosen.release == used
    warned = load_quietly(recipe(tmp_path, version, "max_num_seqs = 2"))
    if why is None:
        assert chosen.note is None and warned == []
    else:
        [note] = warned
        assert note == chosen.note and why in note
        assert f"no vLLM {version[:4]} argument table" in note  # type: ignore[index]


def test_the_cli_says_the_table_it_used_once(cli, tmp_path) -> None:
    vllm_recipe._WARNED.clear()
    r = cli("recipe", "validate", recipe(tmp_path, "0.27.2", "calculate_kv_scales = true"))
    assert r.exit_code == ExitCode.OK, r.stderr
    assert r.stderr.count("warning: engine.version 0.27.2: no vLLM 0.27 argument table") == 1


def test_the_newest_table_is_what_the_tool_reads_from_vllm(tmp_path) -> None:
    """tools/vllm_args.py run on the installed vLLM writes the shipped table byte for byte
    (the 0.25 table was written by the same tool from vLLM 0.25.0's wheel)."""
    if importlib.util.find_spec("vllm") is None:  # found, not imported: vLLM is slow to load
        pytest.skip("no vLLM installed here")
    done = subprocess.run([sys.executable, str(ROOT / "tools/vllm_args.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    [written] = tmp_path.glob("vllm_args_*.json")
    assert written.read_bytes() == (TABLES / written.name).read_bytes()


def gpu_runs() -> list[Path]:
    return sorted((ROOT / "tests/data/gpu-runs").glob("*/runs/*/server.log"))


def test_what_vllm_0_25_reported_is_in_its_table() -> None:
    """The H200 runs' engine (vLLM 0.25.0) printed its non-default arguments: each is an
    argument of the 0.25 table, and the argv that ran is what that table renders."""
    import ast

    logs = gpu_runs()
    assert len(logs) >= 10
    for log in logs:
        recipe = json.loads((log.parent / "recipe.json").read_text())
        version = recipe["engine"]["version"]
        assert vllm.table_for(version).release == (0, 25), log
        line = next(x for x in log.read_text().splitlines() if "non-default args: {" in x)
        reported = ast.literal_eval(line.split("non-default args: ", 1)[1])
        assert all(vllm.is_known_arg(name, version) for name in reported), (log, reported)
        argv = json.loads((log.parent / "launch.json").read_text())["argv"]
        rendered = vllm.render_argv(recipe["engine"]["args"], version=version)
        ran = argv[3:argv.index("--host")]  # after `python -m MODULE`, before the executor's
        assert [a for a in ran if a.startswith("--")] == \
            [a for a in rendered if a.startswith("--")], log
