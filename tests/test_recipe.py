"""Recipe loading: bundled recipes validate; each class of malformed recipe gets its
own clear message and exit code; normalization is stable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.base.canonical import canonical_bytes, digest
from registry.errors import ExitCode, InvalidRecipe
from registry.recipe import Recipe, load_recipe
from registry.recipe.loader import normalize
from tests.recipe_factory import MINIMAL

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted((ROOT / "recipes").glob("*.toml"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_bundled_recipe_validates(path: Path) -> None:
    recipe = load_recipe(path)
    kv_arg = "cache-type-k" if recipe.engine.name == "llama.cpp" else "kv_cache_dtype"
    assert recipe.engine.args[kv_arg]


def test_validate_all_bundled_via_cli(cli) -> None:
    r = cli("recipe", "validate", *BUNDLED)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("ok ") == len(BUNDLED)


def test_show_json_keeps_precision_axes_apart(cli) -> None:
    r = cli("recipe", "show", ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml", "--json")
    assert r.exit_code == 0, r.stderr
    precision = json.loads(r.stdout)["recipe"]["precision"]
    assert precision["weights"] == "int4-w4a16"
    assert precision["kv_cache"] == "bfloat16"
    assert precision["draft_weights"] == "fp8-w8a16"


def test_show_merges_identity_documents(cli) -> None:
    r = cli("recipe", "show", ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml", "--json")
    recipe = json.loads(r.stdout)["recipe"]
    assert recipe["model"]["revision"] == "4bbfc285f2f8b3b6b526274c133b7b17aae6c8cb"
    assert recipe["hardware"] == {"platform": "xpu", "device": "Intel Arc Pro B70", "count": 4,
                                  "identity": "hardware/b70x4"}
    assert set(recipe["identities"]) == {
        "checkpoints/laguna-s-2.1-int4", "checkpoints/laguna-s-2.1-dflash-int4",
        "engines/vllm-laguna-width12-e596ef15", "hardware/b70x4",
        "suites/laguna-s-2.1-realistic-cold-v1",
    }
    args = recipe["engine"]["args"]
    assert args["kv_cache_dtype"] == "bfloat16"
    assert args["tensor_parallel_size"] == 4 and args["enable_expert_parallel"] is True
    assert args["speculative_config"]["num_speculative_tokens"] == 11


def test_checkpoint_kv_maps_to_auto() -> None:
    recipe = load_recipe(ROOT / "recipes/tiny-checkpoint-kv.toml")
    assert recipe.precision.kv_cache == "checkpoint"
    assert recipe.engine.args["kv_cache_dtype"] == "auto"


def _write(tmp_path: Path, text: str, name: str = "r.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "suite.jsonl").write_text('{"id": "a", "prompt": "hi"}\n')
    return path


def _append(section: str, line: str) -> str:
    return MINIMAL.replace(f"[{section}]\n", f"[{section}]\n{line}\n", 1)


# (class of malformation, recipe text, key named in the message, words in the message)
MALFORMED = [
    ("not-toml", "schema = \n", None, "not valid TOML"),
    ("duplicate-key", _append("precision", 'weights = "int4-w4a16"'), None, "overwrite"),
    ("unknown-field", _append("precision", 'kv_cahe = "bfloat16"'), "precision.kv_cahe",
     "did you mean 'kv_cache'"),
    ("wrong-schema", MINIMAL.replace("registry.recipe/v1", "registry.recipe/v0"), "schema",
     "expected 'registry.recipe/v1'"),
    ("kv-auto-is-not-a-dtype", MINIMAL.replace('kv_cache = "bfloat16"', 'kv_cache = "auto"'),
     "precision.kv_cache", "not a dtype"),
    ("kv-conflict", MINIMAL.replace('kv_cache = "bfloat16"', 'kv_cache = "fp8_e4m3"')
     + '\n[engine.args]\nkv_cache_dtype = "bfloat16"\n', "engine.args.kv_cache_dtype",
     "precision.kv_cache"),
    ("revision-not-a-pin", _append("model", 'revision = "main"'), "model.revision",
     "not a full commit hash"),
    ("dashed-engine-arg", MINIMAL + '\n[engine.args]\n"max-model-len" = 8\n',
     "engine.args.max-model-len", "snake_case"),
    ("unknown-engine-arg", MINIMAL + "\n[engine.args]\nmax_modle_len = 8\n",
     "engine.args.max_modle_len", "did you mean 'max_model_len'"),
    ("executor-owned-arg", MINIMAL + "\n[engine.args]\nport = 8000\n", "engine.args.port",
     "executor"),
    ("tp-conflict", MINIMAL + "\n[parallel]\ntensor = 2\n[engine.args]\ntensor_parallel_size = 4\n",
     "engine.args.tensor_parallel_size", "parallel.tensor"),
    ("expert-size", MINIMAL + "\n[parallel]\ntensor = 4\nexpert = 2\n", "parallel",
     "tensor x data"),
    ("too-few-devices", MINIMAL.replace('platform = "cpu"', 'platform = "xpu"\ncount = 2')
     + "\n[parallel]\ntensor = 4\n", "parallel", "hardware.count = 2"),
    ("missing-identity", _append("model", 'identity = "checkpoints/nope"'), None,
     "identity document 'checkpoints/nope' not found"),
    ("bad-expect-regex", MINIMAL + '\n[[expect]]\nname = "m"\npattern = "("\n', "expect.0",
     "does not compile"),
    ("expect-unknown-group", MINIMAL + '\n[[expect]]\nname = "m"\npattern = "x"\n'
     'values = { n = "1" }\n', "expect.0", "groups the pattern lacks"),
    ("gates-missing", MINIMAL + '\n[quality]\ncontract = "semantic-gates"\n', "quality",
     "at least one"),
    ("bool-as-text", MINIMAL + '\n[engine.args]\nenable_prefix_caching = "false"\n',
     "engine.args.enable_prefix_caching", "expected true or false, got 'false'"),
    ("int-as-words", MINIMAL + '\n[engine.args]\nmax_model_len = "lots"\n',
     "engine.args.max_model_len", "expected an integer"),
    ("float-as-text", MINIMAL + '\n[engine.args]\ngpu_memory_utilization = "high"\n',
     "engine.args.gpu_memory_utilization", "expected a number"),
    ("bad-choice", MINIMAL + '\n[engine.args]\ndtype = "float8"\n', "engine.args.dtype",
     "'float8' is not one of auto, bfloat16"),
    ("bad-json", MINIMAL + '\n[engine.args]\ncompilation_config = "{mode: 3"\n',
     "engine.args.compilation_config", "expected a table or JSON text"),
    ("flag-as-number", MINIMAL + '\n[engine.args]\nenforce_eager = 1\n',
     "engine.args.enforce_eager", "expected true or false"),
    ("section-key-typo", MINIMAL.replace('kv_cache = "bfloat16"', 'kv_cahce = "bfloat16"'),
     "precision.kv_cahce", "did you mean 'kv_cache'"),
    ("suite-digest", MINIMAL.replace('path = "suite.jsonl"', 'path = "suite.jsonl"\nsha256 = "'
                                     + "0" * 64 + '"'), "benchmark.suites.0.sha256", "pins"),
]


@pytest.mark.parametrize(("case", "text", "key", "words"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_recipe_is_one_clear_error(cli, tmp_path, case, text, key, words) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InvalidRecipe) as info:
        load_recipe(path)
    assert info.value.key == key
    assert words in str(info.value)
    r = cli("recipe", "validate", path)
    assert r.exit_code == ExitCode.INVALID_INPUT
    assert str(path) in r.stderr and words in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_kv_conflict_names_both_keys(cli, tmp_path) -> None:
    text = MINIMAL.replace('kv_cache = "bfloat16"', 'kv_cache = "fp8_e4m3"')
    path = _write(tmp_path, text + '\n[engine.args]\nkv_cache_dtype = "bfloat16"\n')
    r = cli("recipe", "validate", path)
    assert r.exit_code != 0
    assert "engine.args.kv_cache_dtype" in r.stderr and "precision.kv_cache" in r.stderr


def test_typed_engine_args_pass_as_the_engine_types_them(tmp_path) -> None:
    args = ('\n[engine.args]\nenable_prefix_caching = false\nmax_model_len = "32k"\n'
            'max_num_seqs = 4\ngpu_memory_utilization = 0.5\ncompilation_config = { mode = 3 }\n'
            'speculative_config = \'{"method": "ngram"}\'\nserved_model_name = ["a", "b"]\n')
    recipe = load_recipe(_write(tmp_path, MINIMAL + args))
    assert recipe.engine.args["enable_prefix_caching"] is False
    from registry.engines.vllm.args import render_argv

    argv = render_argv(recipe.engine.args)
    assert "--no-enable-prefix-caching" in argv and "--enable-prefix-caching" not in argv


def test_fp8_alias_agrees_with_e4m3(tmp_path) -> None:
    text = MINIMAL.replace('kv_cache = "bfloat16"', 'kv_cache = "fp8_e4m3"')
    recipe = load_recipe(_write(tmp_path, text + '\n[engine.args]\nkv_cache_dtype = "fp8"\n'))
    assert recipe.engine.args["kv_cache_dtype"] == "fp8"  # the user's spelling reaches vLLM


def test_missing_file(cli, tmp_path) -> None:
    r = cli("recipe", "validate", tmp_path / "absent.toml")
    assert r.exit_code == ExitCode.INVALID_INPUT and "no such file" in r.stderr


def test_identity_document_conflict(tmp_path) -> None:
    (tmp_path / "identities/hardware").mkdir(parents=True)
    (tmp_path / "identities/hardware/h.toml").write_text(
        'schema = "registry.identity/v1"\nkind = "hardware"\n[fields]\nplatform = "xpu"\n')
    text = MINIMAL.replace('platform = "cpu"', 'platform = "cpu"\nidentity = "hardware/h"')
    with pytest.raises(InvalidRecipe, match=r"conflicts with h\.toml"):
        load_recipe(_write(tmp_path, text))


kv = st.sampled_from(["bfloat16", "float16", "fp8_e4m3", "fp8_e5m2", "checkpoint"])
names = st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)
args = st.builds(lambda ints, flags: {**ints, **flags}, st.dictionaries(
    st.sampled_from(["max_model_len", "block_size", "max_num_seqs", "seed"]),
    st.integers(1, 1 << 20), max_size=4), st.dictionaries(
    st.sampled_from(["enforce_eager"]), st.booleans(), max_size=1))  # typed as vLLM types them


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names, kv=kv, tp=st.sampled_from([1, 2, 4]), args=args)
def test_normalizing_twice_is_identical(tmp_path, name, kv, tp, args) -> None:
    text = MINIMAL.replace('name = "t"', f'name = "{name}"').replace(
        'kv_cache = "bfloat16"', f'kv_cache = "{kv}"') + f"\n[parallel]\ntensor = {tp}\n"
    text += "\n[engine.args]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in args.items())
    path = _write(tmp_path, text)
    first, second = load_recipe(path), load_recipe(path)
    assert canonical_bytes(first) == canonical_bytes(second)
    again = normalize(Recipe.model_validate(json.loads(canonical_bytes(first))), path)
    assert canonical_bytes(again) == canonical_bytes(first)
    assert digest(again) == digest(first)


def test_validate_checks_every_file_and_reports_each_failure(cli, tmp_path) -> None:
    bad = _write(tmp_path, MINIMAL.replace('platform = "cpu"', 'platform = "tpu"'))
    r = cli("recipe", "validate", bad, BUNDLED[0], tmp_path / "absent.toml", "--json")
    assert r.exit_code == ExitCode.INVALID_INPUT
    results = json.loads(r.stdout)
    assert [(x["path"], x["ok"]) for x in results] == [
        (str(bad), False), (str(BUNDLED[0]), True), (str(tmp_path / "absent.toml"), False)]
    assert "hardware.platform" in results[0]["error"] and "no such file" in results[2]["error"]
    human = cli("recipe", "validate", bad, BUNDLED[0])
    assert human.exit_code == ExitCode.INVALID_INPUT and human.stdout.startswith("ok  ")
    assert human.stderr.count("error:") == 1 and str(bad) in human.stderr
