"""`registry ab` and the start-level statistics: the comparability check, the ABBA
order, the boost and its interval, on synthetic figures and on captured real runs."""

from __future__ import annotations

import pytest

from registry.ab.comparable import compare_fields, side_fields
from registry.errors import InvalidInput
from registry.recipe import load_recipe
from tests.conftest import ROOT

RECIPES = ROOT / "recipes"


def fields(name: str, **args: object) -> dict:
    recipe = load_recipe(RECIPES / f"{name}.toml")
    if args:
        recipe = recipe.model_copy(update={"engine": recipe.engine.model_copy(
            update={"args": {**recipe.engine.args, **args}})})
    return side_fields(recipe)


# ---- comparability ----

def test_a_recipe_is_comparable_with_itself() -> None:
    verdict = compare_fields(fields("tiny-bf16-kv"), fields("tiny-bf16-kv"), [])
    assert verdict.comparable and verdict.differences == []


def test_a_kv_precision_change_is_another_quality_class_unless_named() -> None:
    a, b = fields("tiny-bf16-kv"), fields("tiny-fp8-kv")
    refused = compare_fields(a, b, [])
    assert not refused.comparable
    assert refused.refused_axes == ["quality-class", "quality-outcome"]
    assert "precision.kv_cache (bfloat16 vs fp8_e4m3)" in refused.refusal().message
    named = compare_fields(a, b, ["precision.kv_cache"])
    assert named.comparable
    assert {d.field for d in named.differences} >= {"precision.kv_cache", "quality.contract"}


def test_an_engine_argument_must_be_named_and_naming_another_does_not_cover_it() -> None:
    a, b = fields("tiny-bf16-kv"), fields("tiny-bf16-kv", max_num_seqs=4)
    assert compare_fields(a, b, []).refused_axes == ["engine-args"]
    assert compare_fields(a, b, ["engine.args.max_num_seqs"]).comparable
    assert compare_fields(a, b, ["engine-args"]).comparable
    assert not compare_fields(a, b, ["engine.args.max_model_len"]).comparable
    # the cache policy is its own axis, not a knob
    c = fields("tiny-bf16-kv", enable_prefix_caching=True)
    assert compare_fields(a, c, ["engine-args"]).refused_axes == ["cache-policy"]


def test_topology_and_workload_differences_are_refused_by_axis() -> None:
    a = load_recipe(RECIPES / "tiny-bf16-kv.toml")
    wider = a.model_copy(update={"parallel": a.parallel.model_copy(update={"tensor": 2})})
    longer = a.model_copy(update={"benchmark": a.benchmark.model_copy(
        update={"max_tokens": 256, "window": 50})})
    assert compare_fields(side_fields(a), side_fields(wider), []).refused_axes == ["topology"]
    assert compare_fields(side_fields(a), side_fields(longer), []).refused_axes == [
        "metric-window", "workload"]


def test_a_delta_that_names_nothing_is_bad_input() -> None:
    with pytest.raises(InvalidInput, match=r"--delta precision\.kv: not an axis"):
        compare_fields({}, {}, ["precision.kv"])
