"""`registry reproduce` without an engine: the verdicts on captured CPU runs, the
environment check, refusals before anything runs, and `registry run`'s seal checks.
The full path on the real engine is in tests/engine/test_reproduce_engine.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from registry.contracts.sealed import SealedRun
from registry.executor import engine
from registry.formats import rundir
from registry.formats.rundir import Bench, BenchRow, read_model
from registry.recipe.schema import MetricFormula, Platform
from registry.reproduce.judge import (
    COLD_START_NOTE,
    contract_verdict,
    identity_verdict,
    performance_verdict,
)
from registry.resolve import resolve_run
from registry.resolve.inputs import load_run_recipe
from tests.checkpoints import build, llama_config, weights
from tests.conftest import ROOT

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
CAPTURED = ROOT / "tests/data/cpu-runs"


def sealed_run(name: str, rid: str = "0" * 64, bench: Bench | None = None) -> SealedRun:
    """A captured run as `reproduce` reads a record: identity resolved from its evidence."""
    run_dir = CAPTURED / name
    return SealedRun(id=rid, recipe=load_run_recipe(run_dir, None, None),
                     identity=resolve_run(run_dir),
                     bench=bench or read_model(run_dir / rundir.BENCH, Bench),
                     bench_intact=True, stored_verdict=None)


def with_rows(run: SealedRun, rows: list[BenchRow], rid: str = "1" * 64) -> SealedRun:
    return run.model_copy(update={"id": rid, "bench": run.bench.model_copy(update={"rows": rows})})


def timed(rows: list[BenchRow], step: float) -> list[BenchRow]:
    """The rows with every token `step` seconds after the previous one."""
    return [r.model_copy(update={"token_times_s": [0.05 + i * step
                                                   for i in range(len(r.token_ids))]})
            for r in rows]


# ---- identity ----

def test_the_same_run_reproduces_its_identity(database_url) -> None:
    run = sealed_run("tiny-bf16-kv")
    verdict = identity_verdict(run, run)
    assert verdict.passed and verdict.differences == [] and verdict.compared > 20
    assert set(verdict.not_compared) == {"kv.capacity_tokens", "kv.memory_gib",
                                         "kv.max_concurrency"}


def test_a_kv_precision_change_fails_identity_and_names_the_field(database_url) -> None:
    verdict = identity_verdict(sealed_run("tiny-bf16-kv"), sealed_run("tiny-fp8-kv"))
    assert not verdict.passed
    changes = {d.name: (d.original, d.new) for d in verdict.differences}
    assert changes["precision.kv_cache"] == ("bfloat16", "fp8_e4m3")
    # capacity differs too (the FP8 pool holds twice the tokens) but is not an identity
    assert not {"kv.capacity_tokens", "kv.memory_gib"} & set(changes)


def test_fields_the_original_lacks_are_not_compared(database_url) -> None:
    original = sealed_run("tiny-bf16-kv")
    fields = {k: v for k, v in original.identity.fields.items() if k != "model.manifest_sha256"}
    older = original.model_copy(update={"identity": original.identity.model_copy(
        update={"fields": fields})})
    verdict = identity_verdict(older, sealed_run("tiny-bf16-kv"))
    assert verdict.passed
    assert verdict.not_compared["model.manifest_sha256"] == \
        "the original record does not carry this field"


# ---- performance ----

def test_performance_is_rederived_from_the_raw_timestamps(database_url) -> None:
    original = sealed_run("tiny-bf16-kv")
    rows = original.bench.rows
    before = with_rows(original, timed(rows, 0.001), "a" * 64)
    slower = with_rows(original, timed(rows, 0.001 / 0.9))  # 90% of the speed
    verdict = performance_verdict(before, slower, MetricFormula.intervals_99, 100, 0.95)
    [suite] = verdict.suites
    assert verdict.status == "failed" and suite.formula == "99 / (t[99] - t[0])"
    assert suite.original == pytest.approx(1000.0) and suite.ratio == pytest.approx(0.9)
    assert performance_verdict(before, slower, MetricFormula.intervals_99, 100, 0.85).passed
    legacy = performance_verdict(before, slower, MetricFormula.legacy_100, 100, 0.85)
    assert legacy.suites[0].original == pytest.approx(1000.0 / 0.99)


def test_a_new_run_without_a_decode_window_fails_performance(database_url) -> None:
    captured = sealed_run("tiny-bf16-kv")
    original = with_rows(captured, timed(captured.bench.rows, 0.001), "a" * 64)
    short = [r.model_copy(update={"token_times_s": r.token_times_s[:50]})
             for r in original.bench.rows]
    verdict = performance_verdict(original, with_rows(original, short),
                                  MetricFormula.intervals_99, 100, 0.0)
    assert verdict.status == "failed" and not verdict.passed
    assert "no unflagged row of the new run reached 100 tokens" in verdict.suites[0].detail


def test_a_burst_original_is_not_judged_on_its_impossible_rate(database_url) -> None:
    original = sealed_run("tiny-checkpoint-kv-bf16")  # every row arrived in bursts
    verdict = performance_verdict(original, original, MetricFormula.intervals_99, 100, 0.95)
    [suite] = verdict.suites
    assert suite.original is None and suite.quality_original == "degraded"
    assert "no unflagged decode rate" in suite.detail


def noisy(rows: list[BenchRow], speed: float, seed: int, round_: int = 0) -> list[BenchRow]:
    """Rows paced at `speed` x 1000 tok/s with +-15% per-row spread (a seeded draw)."""
    import random

    rng = random.Random(seed)
    out = []
    for r in rows:
        step = 0.001 / speed * rng.uniform(0.85, 1.15)
        out.append(r.model_copy(update={"round": round_, "token_times_s": [
            0.05 + i * step for i in range(len(r.token_ids))]}))
    return out


def test_noise_is_undecided_then_inconclusive_at_the_budget(database_url) -> None:
    from registry.reproduce.judge import judge_rows

    rows = sealed_run("tiny-bf16-kv").bench.rows
    sealed, new = noisy(rows, 1.0, 1), noisy(rows, 0.95, 2)
    one = judge_rows(sealed, new, ["tiny-cold"], MetricFormula.intervals_99, 100, 0.95, 3)
    assert one.status == "undecided" and one.rounds == 1
    s = one.suites[0]
    assert s.ratio_low is not None and s.ratio_high is not None
    assert s.ratio_low < 0.95 < s.ratio_high
    spent = judge_rows(sealed, new, ["tiny-cold"], MetricFormula.intervals_99, 100, 0.95, 1)
    assert spent.status == "inconclusive" and not spent.passed


def test_more_rounds_decide_a_real_slowdown(database_url) -> None:
    from registry.reproduce.judge import judge_rows

    rows = sealed_run("tiny-bf16-kv").bench.rows
    sealed = noisy(rows, 1.0, 1)
    new = [r for k in range(6) for r in noisy(rows, 0.75, 10 + k, round_=k)]
    verdict = judge_rows(sealed, new, ["tiny-cold"], MetricFormula.intervals_99, 100, 0.95, 6)
    [s] = verdict.suites
    assert verdict.status == "failed" and verdict.rounds == 6 and s.rows_new == 48
    assert s.slower and s.ratio_high is not None and s.ratio_high < 0.95


def test_the_same_speed_passes_with_enough_rows(database_url) -> None:
    from registry.reproduce.judge import judge_rows

    rows = sealed_run("tiny-bf16-kv").bench.rows
    sealed = [r for k in range(3) for r in noisy(rows, 1.0, k, round_=k)]
    new = [r for k in range(3) for r in noisy(rows, 1.05, 20 + k, round_=k)]
    verdict = judge_rows(sealed, new, ["tiny-cold"], MetricFormula.intervals_99, 100, 0.95, 5)
    assert verdict.status == "passed" and not verdict.suites[0].slower


# ---- contract ----

def test_bitwise_against_the_original_rows(store_home) -> None:
    original = sealed_run("tiny-bf16-kv", "a" * 64)
    verdict = contract_verdict(store_home, "bitwise-teacher", original,
                               with_rows(original, original.bench.rows), original.recipe)
    assert verdict.passed and len(verdict.verdicts) == 1
    assert verdict.verdicts[0].rows_passed == 8 and "a" * 12 in verdict.verdicts[0].reference

    rows = [r.model_copy(deep=True) for r in original.bench.rows]
    rows[2].token_ids[7] += 1
    verdict = contract_verdict(store_home, "bitwise-teacher", original,
                               with_rows(original, rows), original.recipe)
    assert not verdict.passed and verdict.note is None  # the CPU build: no cold-start hint
    [bad] = [r for r in verdict.verdicts[0].rows if not r.passed]
    assert (bad.index, bad.first_diff.index) == (2, 7)

    on_gpu = original.recipe.model_copy(update={"hardware": original.recipe.hardware.model_copy(
        update={"platform": Platform.cuda})})
    verdict = contract_verdict(store_home, "bitwise-teacher", original,
                               with_rows(original, rows), on_gpu)
    assert verdict.note == COLD_START_NOTE  # a compiling GPU engine: say why it may differ
    eager = on_gpu.model_copy(update={"engine": on_gpu.engine.model_copy(
        update={"args": {**on_gpu.engine.args, "enforce_eager": True}})})
    assert contract_verdict(store_home, "bitwise-teacher", original,
                            with_rows(original, rows), eager).note is None


def test_bitwise_refuses_another_kv_precision(store_home) -> None:
    fp8 = sealed_run("tiny-fp8-kv")
    verdict = contract_verdict(store_home, "bitwise-teacher", sealed_run("tiny-bf16-kv"), fp8,
                               fp8.recipe)
    assert not verdict.passed and verdict.verdicts[0].status.value == "refused"
    assert verdict.verdicts[0].reasons[0].startswith("precision.kv_cache bfloat16 vs fp8_e4m3")


def test_self_consistency_and_rows_changed_after_sealing(store_home) -> None:
    original = sealed_run("tiny-fp8-kv")
    same = with_rows(original, original.bench.rows)
    assert contract_verdict(store_home, "self-consistency", original, same,
                            original.recipe).passed
    tampered = same.model_copy(update={"bench_intact": False})
    verdict = contract_verdict(store_home, "self-consistency", original, tampered,
                               original.recipe)
    assert not verdict.passed and "no longer matches its signed digest" in verdict.problems[0]


# ---- the engine tree, sealed and checked ----

def test_the_engine_tree_of_a_source_build(database_url) -> None:
    from registry.seal import engine_tree

    editable = {"url": "file:///src/my%20vllm", "dir_info": {"editable": True}}
    assert engine_tree(None, editable) == (Path("/src/my vllm"), None)
    recipe = sealed_run("tiny-bf16-kv").recipe
    pinned = recipe.model_copy(update={"engine": recipe.engine.model_copy(
        update={"source": "/opt/vllm"})})
    assert engine_tree(pinned, editable) == (Path("/opt/vllm"), None)  # the recipe's wins
    location, version = engine_tree(None, None)  # the installed package, not imported
    assert location is not None and location.name == "vllm" and version == "0.32.0"


# ---- the command, before anything runs ----

@pytest.fixture
def sealed_capture(store_home, tmp_path) -> str:
    """The captured BF16 run sealed into the home (its checkpoint was not on disk)."""
    from registry.seal import seal_run

    run = shutil.copytree(CAPTURED / "tiny-bf16-kv", tmp_path / "captured")
    return seal_run(run, home=store_home).id


@pytest.fixture
def models(tmp_path) -> Path:
    build(tmp_path / "models" / "tiny-llama", llama_config(), weights())
    return tmp_path / "models"


def test_dry_run_prints_the_plan_and_the_drift(cli, sealed_capture, models, hash_cache) -> None:
    recipe = ROOT / "recipes" / "tiny-bf16-kv.toml"  # the capture predates sealed suites
    r = cli("reproduce", sealed_capture[:12], "--dry-run", "--models", models, "--json",
            "--recipe", recipe)
    assert r.exit_code == 6, r.stderr
    done = json.loads(r.stdout)
    assert done["dry_run"] and "record" not in done  # nothing ran, nothing sealed
    assert done["plan"]["argv"][done["plan"]["argv"].index("--kv-cache-dtype") + 1] == "bfloat16"
    facts = {f["name"]: f for f in done["environment"]["facts"]}
    manifest = facts["model.manifest_sha256"]
    assert "sealed" not in manifest and len(manifest["now"]) == 64 and not manifest["equal"]
    # unknown when sealed, known now: newly known, shown, never drift
    assert manifest["state"] == "newly known"
    assert "model.manifest_sha256" not in done["environment"]["drift"]
    assert {"platform.machine", "platform.os", "engine.distribution", "engine.tree"} <= set(facts)
    text = cli("reproduce", sealed_capture[:12], "--dry-run", "--models", models,
               "--recipe", recipe)
    assert "vllm.entrypoints.launchers.api_server.entry" in text.stdout and "DRIFT" in text.stdout


def test_drift_is_refused_before_anything_runs(cli, sealed_capture, models, tmp_path,
                                               hash_cache, monkeypatch) -> None:
    from registry.executor import environment

    monkeypatch.setattr(environment, "cpu_model", lambda: "Another CPU")
    started = len(engine.STARTED)
    r = cli("reproduce", sealed_capture, "--models", models, "--out", tmp_path / "again")
    assert r.exit_code == 6 and "environment drift since record" in r.stderr
    assert "is 'Another CPU'" in r.stderr and "--allow-env-drift" in r.stderr
    assert "model.manifest_sha256" not in r.stderr  # newly known is not drift
    assert "Traceback" not in r.stderr
    assert len(engine.STARTED) == started and not (tmp_path / "again").exists()


def test_a_record_without_its_prompts_needs_the_recipe(cli, sealed_capture, models, tmp_path,
                                                      hash_cache) -> None:
    r = cli("reproduce", sealed_capture, "--models", models, "--allow-env-drift",
            "--out", tmp_path / "again")
    assert r.exit_code == 4 and "the record does not carry its prompts" in r.stderr
    assert "--recipe FILE" in r.stderr and not (tmp_path / "again").exists()
    dry = cli("reproduce", sealed_capture, "--models", models, "--dry-run")
    assert dry.exit_code == 4 and "the record does not carry its prompts" in dry.stderr


def test_a_capture_sealed_with_its_recipe_carries_its_prompts(store_home, tmp_path, cli, models,
                                                              hash_cache) -> None:
    from registry.seal import seal_run

    run = shutil.copytree(CAPTURED / "tiny-bf16-kv", tmp_path / "captured")
    rid = seal_run(run, home=store_home, recipe_path=ROOT / "recipes" / "tiny-bf16-kv.toml").id
    dry = cli("reproduce", rid, "--models", models, "--dry-run", "--allow-env-drift")
    assert dry.exit_code == 0, dry.stderr
    assert "does not carry its prompts" not in dry.stderr and "None" not in dry.stdout


def test_unknown_record_and_bad_threshold(cli, sealed_capture) -> None:
    assert cli("reproduce", "abcdef12").exit_code == 5
    r = cli("reproduce", sealed_capture, "--min-performance", "-1")
    assert r.exit_code == 4 and "--min-performance -1.0: must be 0 or more" in r.stderr


# ---- registry run checks its home before the engine starts ----

def test_run_without_a_home_fails_before_the_engine(cli, tmp_path, monkeypatch,
                                                    database_url) -> None:
    monkeypatch.delenv("REGISTRY_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    started = len(engine.STARTED)
    r = cli("run", ROOT / "recipes/tiny-bf16-kv.toml", "--out", tmp_path / "run")
    assert r.exit_code == 5 and "no registry home" in r.stderr
    assert "registry init" in r.stderr and "--no-seal" in r.stderr
    assert len(engine.STARTED) == started and not (tmp_path / "run").exists()


def test_run_with_an_untrusted_key_fails_before_the_engine(cli, tmp_path, monkeypatch,
                                                          database_url) -> None:
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    create_key(tmp_path / "owner")
    home = init_home(tmp_path / ".registry")
    genesis(home, signing_key(tmp_path / "owner"))  # someone else's ledger
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    create_key(tmp_path / "keys")
    r = cli("run", ROOT / "recipes/tiny-bf16-kv.toml", "--home", home.root,
            "--out", tmp_path / "run")
    assert r.exit_code == 6 and "is not a signer in the keyring" in r.stderr
    assert not (tmp_path / "run").exists()
