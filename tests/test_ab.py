"""`registry ab` and the start-level statistics: the comparability check, the ABBA
order, the boost and its interval, on synthetic figures and on captured real runs."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from registry.ab.comparable import compare_fields, side_fields
from registry.errors import InvalidInput
from registry.recipe import load_recipe
from registry.recipe.schema import MetricFormula
from tests.conftest import ROOT
from tests.test_reproduce import models as models  # (a fixture)
from tests.test_reproduce import sealed_capture  # noqa: F401  (fixture)
from tests.test_team import team  # noqa: F401  (the push/pull fixture)

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


# ---- statistics over starts ----

def test_t_quantiles_match_the_tables() -> None:
    from registry.measure.starts import t_quantile

    for df, expected in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (100, 1.984)):
        assert t_quantile(0.975, df) == pytest.approx(expected, abs=2e-3)


def test_the_abba_order() -> None:
    from registry.measure.starts import alternating

    assert "".join(alternating(3)) == "ABBAAB"
    assert alternating(2, "record", "control") == ["record", "control", "control", "record"]


def synthetic(ratio: float, pairs: int, spread: float, seed: int, drift: float = 0.0) -> list:
    """Start figures of A (500 tok/s) and B (ratio x A) in ABBA order, each start off by a
    lognormal `spread`, the host slowing by `drift` per start."""
    import random

    from registry.measure.starts import StartFigure, alternating

    rng = random.Random(seed)
    order = alternating(pairs)
    return [StartFigure(start=i, side=s, rows=8, value=500 * (ratio if s == "B" else 1)
                        * math.exp(rng.gauss(0, spread)) * (1 - drift * i))
            for i, s in enumerate(order)]


def test_the_interval_covers_the_spread_between_starts() -> None:
    from registry.measure.starts import boost_verdict, pair_logs, paired_interval

    covered = inconclusive = 0
    for seed in range(300):
        iv = paired_interval(pair_logs(synthetic(1.0, 3, 0.08, seed)))
        assert iv is not None and iv.low is not None and iv.high is not None
        covered += iv.low <= 1.0 <= iv.high
        inconclusive += boost_verdict(iv) == "inconclusive"
    assert covered / 300 == pytest.approx(0.95, abs=0.04)  # t is exact for normal ln figures
    assert inconclusive > 250  # three starts of 8% spread cannot call a difference


def test_a_real_boost_is_found_through_a_drifting_host() -> None:
    from registry.measure.starts import boost_verdict, pair_logs, paired_interval

    figures = synthetic(1.15, 5, 0.03, 7, drift=0.02)  # the host 2% slower each start
    iv = paired_interval(pair_logs(figures))
    assert iv is not None and iv.low is not None
    assert iv.ratio == pytest.approx(1.15, rel=0.05) and iv.low > 1.05
    assert boost_verdict(iv) == "faster"
    same = paired_interval(pair_logs(synthetic(1.0, 6, 0.005, 3)))
    assert boost_verdict(same) == "no difference"
    one = paired_interval(pair_logs(synthetic(1.0, 1, 0.05, 3)))
    assert one is not None and one.low is None and boost_verdict(one) == "inconclusive"


def test_a_control_cancels_a_host_that_is_slower_today() -> None:
    from registry.measure.starts import log_spread, pair_logs, paired_interval

    # sealed: the record and its control at 500 and 400 tok/s, three starts each
    record, control = [500.0, 510.0, 490.0], [400.0, 405.0, 396.0]
    sealed = math.log(statistics.geometric_mean(record) / statistics.geometric_mean(control))
    spreads = [s for s in (log_spread(record), log_spread(control)) if s]
    for extra, passes in ((1.0, True), (0.85, False)):
        # today the host is 20% slower: the control (A) at 320; the record (B) at 1.25 x
        # that, or 15% slower still
        now = [f.model_copy(update={"value": f.value * 320 / 500})
               for f in synthetic(1.25 * extra, 2, 0.01, 5)]
        iv = paired_interval(pair_logs(now), sealed=sealed, sealed_weight=(1 / 3 + 1 / 3) / 2,
                             start_spreads=spreads)
        assert iv is not None and iv.low is not None and iv.high is not None
        assert (iv.low >= 0.95) is passes and (iv.high < 0.95) is not passes


def test_captured_h200_starts_of_one_record_show_no_difference_against_themselves() -> None:
    """Eleven engine starts of one BF16 recipe on two H200s, split A B B A ...: the boost's
    interval contains 0 and the figures come from the raw rows."""
    from registry.formats import rundir
    from registry.formats.rundir import Bench, read_model
    from registry.measure.starts import (
        StartFigure,
        alternating,
        boost_verdict,
        pair_logs,
        paired_interval,
        start_figure,
    )

    runs = ROOT / "tests/data/gpu-runs/h200x2-20261130/runs"
    names = ["bf16", *(f"bf16-again-{i}" for i in range(1, 10))]
    order = alternating(5)
    figures = []
    for i, (name, side) in enumerate(zip(names, order, strict=True)):
        rows = read_model(runs / name / rundir.BENCH, Bench).timed_rows
        value, used = start_figure(rows, MetricFormula.intervals_99, 100)
        figures.append(StartFigure(start=i, side=side, value=value, rows=used))
    assert all(f.value and 300 < f.value < 600 for f in figures)
    iv = paired_interval(pair_logs(figures))
    assert iv is not None and iv.low is not None and iv.high is not None
    assert iv.low < 1.0 < iv.high and iv.high / iv.low < 1.05  # a steady host: narrow
    assert boost_verdict(iv) in {"no difference", "inconclusive"}


# ---- registry ab with the scripted engine ----

SCRIPT = ROOT / "tests/scripted_engine.py"
LOG = ROOT / "tests/data/cpu-runs/tiny-bf16-kv/server.log"


def scripted_launcher(gaps: list[float] | None = None):
    """The scripted engine replaying a real CPU engine's log; each start streams at the gap
    its recipe's engine env names (SCRIPTED_GAP_S), or the next of `gaps`."""
    from registry.executor.engine import Engine

    started: list[str] = []

    def launch(plan, log):
        gap = float(plan.env.get("SCRIPTED_GAP_S", "0.003"))
        if gaps:
            gap = gaps[len(started) % len(gaps)]
        started.append(plan.env.get("SCRIPTED_GAP_S", "-"))
        argv = ["python", str(SCRIPT), "--port", str(plan.port),
                json.dumps({"gap_s": gap, "log_file": str(LOG)})]
        return Engine(plan.model_copy(update={"argv": argv}), log)

    launch.started = started  # type: ignore[attr-defined]
    return launch


def recipe_pair(tmp_path, b_gap: str) -> tuple[str, str, object]:
    """tiny-bf16-kv as side A, and the same with SCRIPTED_GAP_S in its engine env as B;
    the tiny checkpoint's files (no weights needed: the engine is scripted)."""
    import shutil

    from tests.checkpoints import build, llama_config, weights

    checkpoints = tmp_path / "models"
    build(checkpoints / "tiny-llama", llama_config(), weights())
    shutil.copytree(RECIPES / "suites", tmp_path / "suites")
    text = (RECIPES / "tiny-bf16-kv.toml").read_text()
    (tmp_path / "a.toml").write_text(text)
    (tmp_path / "b.toml").write_text(text.replace(
        "[hardware]", f'[engine.env]\nSCRIPTED_GAP_S = "{b_gap}"\n\n[hardware]'))
    return str(tmp_path / "a.toml"), str(tmp_path / "b.toml"), checkpoints


SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def test_ab_runs_abba_seals_every_start_and_its_attestation_travels(
        cli, team, tmp_path, monkeypatch) -> None:  # noqa: F811
    from registry.ab.runner import ab
    from registry.store.home import home_at
    from registry.store.query import find_records
    from registry.store.verifications import verifications_of
    from tests.test_team import add_remote, verify_all

    alice, bob = team
    url = str(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, None, create=True)
    home = home_at(alice.home)
    a, b, checkpoints = recipe_pair(tmp_path, "0.0015")
    launch = scripted_launcher()
    result = ab(home, a, b, deltas=["engine.env"], starts=2, models_dir=checkpoints,
                out_dir=tmp_path / "runs", launcher=launch)
    assert launch.started == ["-", "0.0015", "0.0015", "-"]  # A B B A
    assert [s.side for s in result.starts] == ["A", "B", "B", "A"]
    assert len({s.record for s in result.starts}) == 4
    assert {r.id for r in find_records(home)} >= {s.record for s in result.starts}
    [suite] = result.suites
    assert suite.a and suite.b and suite.b > 1.3 * suite.a
    assert suite.boost_pct == pytest.approx(100 * (suite.ratio - 1))
    assert result.outcome is not None and result.outcome.comparable  # same tokens
    assert suite.verdict in {"faster", "inconclusive"} and suite.boost_pct > 30
    # the comparison attestation names every start and verifies on another home
    [v] = verifications_of(home, result.starts[0].record)
    assert v.id == result.verification
    assert sorted(v.statement.judged()) == sorted(s.record for s in result.starts)
    [boost] = [c for c in v.statement.predicate.checks if c.name.startswith("boost/")]
    assert boost.figures[-1].value == pytest.approx(suite.boost_pct)
    assert cli("push").exit_code == 0
    add_remote(cli, monkeypatch, bob, url, None)
    assert cli("pull").exit_code == 0
    shown = json.loads(cli("show", result.starts[2].record, "--json").stdout)
    assert [x["id"] for x in shown["verifications"]] == [result.verification]
    report = verify_all(cli, bob)
    assert report["code"] == 0 and report["verifications"] == 1, report


@SQLITE
def test_a_sequential_ab_stops_when_decided_and_says_why(store_home, tmp_path) -> None:
    """--starts 2 --max-starts 3: judged after two starts a side, a pair more only while
    undecided; the stop, the starts used and the basis of the disturbance evidence (on
    the CPU: row spread and probe, no GPU samples) are in the result and the attestation."""
    from registry.ab.runner import ab
    from registry.store.verifications import verifications_of

    a, b, checkpoints = recipe_pair(tmp_path, "0.0015")
    result = ab(store_home, a, b, deltas=["engine.env"], starts=2, max_starts=3,
                models_dir=checkpoints, out_dir=tmp_path / "runs", launcher=scripted_launcher())
    n = result.starts_per_side
    assert n in (2, 3) and len(result.order) == len(result.starts) == 2 * n
    assert result.look_level == pytest.approx(1 - 0.05 / 2) and result.max_starts == 3
    [suite] = result.suites
    assert suite.why is not None and suite.verdict == suite.why.status
    assert "no GPU samples: row spread and the host probe" in suite.why.basis
    if suite.verdict == "faster":
        assert result.stopped == f"decided after {n} starts a side"
        assert suite.why.reason.startswith("decided on starts ")
    else:
        assert result.stopped == "most starts spent (3 a side, --max-starts)"
        assert "a decision needs" in suite.why.reason or "host disturbed" in suite.why.reason
    # every start not used is named as disturbed or gave no figure: none silently dropped
    figures = {s.start: s.figures[0].value for s in result.starts}
    for k in set(figures) - set(suite.why.used):
        assert k in suite.why.disturbed or figures[k] is None
        if k in suite.why.disturbed:
            assert suite.why.disturbed[k] in suite.why.reason
    [v] = verifications_of(store_home, result.starts[0].record)
    assert v.statement.predicate.policy.parameters["stopped"] == result.stopped
    from registry.cli.ab import _print
    from registry.cli.output import console

    with console.capture() as shown:
        _print(result)
    text = shown.get()
    assert f"stopped: {result.stopped}" in text and suite.why.reason in " ".join(text.split())
    [boost] = [c for c in v.statement.predicate.checks if c.name.startswith("boost/")]
    assert suite.why.reason in boost.detail


@SQLITE
def test_ab_refuses_before_anything_runs(store_home, tmp_path, cli) -> None:
    a, b, checkpoints = recipe_pair(tmp_path, "0.002")
    r = cli("ab", a, b, "--models", str(checkpoints), "--out", str(tmp_path / "runs"))
    output = r.stdout + r.stderr
    assert r.exit_code == 4 and "not comparable: runtime-base differ" in output
    assert "engine.env" in output and not (tmp_path / "runs").exists()
    dry = cli("ab", a, b, "--models", str(checkpoints), "--dry-run", "--delta", "engine.env")
    assert dry.exit_code == 0 and "plan: A B B A A B" in dry.stdout
    refused = cli("ab", a, b, "--models", str(checkpoints), "--dry-run", "--json")
    assert refused.exit_code == 4
    assert json.loads(refused.stdout)["comparability"]["refused_axes"] == ["runtime-base"]
    assert cli("ab", a, a, "--starts", "1").exit_code == 4


@SQLITE
def test_a_dry_run_needs_no_models(store_home, tmp_path, cli, monkeypatch) -> None:
    """Comparability is said before models are asked for; a comparable dry run shows the
    plan with `${REGISTRY_MODELS}` unexpanded (docs/cli.md's example runs as printed)."""
    monkeypatch.delenv("REGISTRY_MODELS", raising=False)
    a, b, _ = recipe_pair(tmp_path, "0.002")
    refused = cli("ab", a, b, "--dry-run", "--json")
    assert refused.exit_code == 4 and "is not set" not in refused.stderr
    assert json.loads(refused.stdout)["comparability"]["refused_axes"] == ["runtime-base"]
    dry = cli("ab", a, b, "--dry-run", "--delta", "engine.env", "--json")
    assert dry.exit_code == 0, dry.stderr
    assert "${REGISTRY_MODELS}" in " ".join(json.loads(dry.stdout)["plans"]["A"]["argv"])


# ---- the host probe, GPU samples, run --starts and controlled reproductions ----

def test_the_probe_times_a_fixed_loop() -> None:
    from registry.executor.probe import Probe, sample, speed

    one = sample()
    assert one.cpu_s > 0 and one.memory_gib_s > 0
    then = Probe(before=one, after=one)
    slower = Probe(before=one.model_copy(update={"cpu_s": one.cpu_s * 1.25}))
    assert speed(then, slower) == pytest.approx(0.8)
    assert speed(None, then) is None


def test_gpu_samples_captured_on_an_h200_are_summarised() -> None:
    from registry.executor.gpu import parse, summary

    text = (ROOT / "tests/data/gpu-samples/h200x1-20261201-second.csv").read_text()
    samples = parse(text)
    assert len(samples) == 1699  # every line but the header
    s = summary(samples)
    assert s.busy == 61 and s.sm_mhz_min_busy == 1980 and s.throttled == []
    assert s.power_w_max is not None and 300 < s.power_w_max < 350
    hot = [x.model_copy(update={"reasons": 0x20}) if x.utilization_pct == 100 else x
           for x in samples]
    assert summary(hot).throttled == ["sw thermal slowdown"] and summary(hot).first_throttle


def seal_scripted(home, recipe_file, out, starts: int, gap: float) -> str:
    from registry.executor.run import run
    from registry.seal import seal_run

    recipe = load_recipe(recipe_file)
    run(recipe, out, recipe_dir=recipe_file.parent, recipe_file=recipe_file,
        models_dir=out.parent / "models", launcher=scripted_launcher([gap]), starts=starts,
        timeout=60)
    return seal_run(out, home=home, recipe_path=recipe_file).id


@SQLITE
def test_a_control_cancels_a_slower_host_end_to_end(store_home, tmp_path) -> None:
    from registry.contracts.sealed import load_sealed
    from registry.formats import rundir
    from registry.reproduce import reproduce

    a, _, _ = recipe_pair(tmp_path, "0.002")
    record = seal_scripted(store_home, Path(a), tmp_path / "record", 2, 0.003)
    control = seal_scripted(store_home, Path(a), tmp_path / "control", 2, 0.003)
    sealed = load_sealed(store_home, record)
    assert sorted({r.start for r in sealed.bench.timed_rows}) == [0, 1]
    assert (tmp_path / "record" / rundir.STARTS / "1" / rundir.SERVER_LOG).is_file()
    assert (tmp_path / "record" / rundir.PROBE).is_file()
    # today every start runs a third slower: record and control alike (drift allowed: the
    # replayed log names another checkpoint path, so the sealed manifest digest is unknown)
    done = reproduce(store_home, record, control=control, starts=2, allow_env_drift=True,
                     models_dir=tmp_path / "models", out_dir=tmp_path / "now",
                     launcher=scripted_launcher([0.0045]))
    c = done.controlled
    assert c is not None and c.order == ["record", "control", "control", "record"]
    [suite] = c.suites
    assert suite.host_factor is not None and suite.host_factor < 0.85
    assert suite.uncontrolled is not None and suite.uncontrolled < 0.85
    assert c.uncontrolled.status == "failed"  # the row-level verdict blames the record
    [perf] = done.performance.suites
    assert perf.ratio == pytest.approx(1.0, abs=0.15), perf.detail
    assert done.performance.status != "failed", perf.detail
    assert done.verification and done.record in [s.record for s in c.starts]
    assert done.host_speed is not None  # both runs kept their probe (the client's host)
    # the verdict says why, and on the CPU says what the disturbance rule had to go on
    from registry.cli.reproduce import _verdict_lines

    assert suite.why is not None and suite.why.reason in perf.detail
    lines = "\n".join(_verdict_lines(done))
    assert f"tiny-cold: {suite.why.status}: {suite.why.reason}" in lines
    assert "stopped: " in lines and c.stopped and c.max_starts == 2
    assert "disturbance judged on: no GPU samples: row spread and the host probe" in lines


@SQLITE
def test_a_control_is_another_record_refused_before_anything_runs(
        cli, sealed_capture, models, tmp_path, hash_cache) -> None:  # noqa: F811
    from registry.executor import engine

    started = len(engine.STARTED)
    recipe = RECIPES / "tiny-bf16-kv.toml"
    base = ["reproduce", sealed_capture, "--models", models, "--allow-env-drift", "--recipe",
            recipe, "--out", tmp_path / "again"]
    itself = cli(*base, "--control", sealed_capture[:12])
    assert itself.exit_code == 4 and "cannot be its control" in itself.stderr
    teacher = cli(*base, "--control", "teacher")
    assert teacher.exit_code == 4 and "lane tiny-bf16-exact has no teacher record" in teacher.stderr
    assert cli(*base, "--control", "abcdef12").exit_code == 5
    assert len(engine.STARTED) == started and not (tmp_path / "again").exists()


def test_the_gpu_sampler_runs_nvidia_smi_beside_the_suite(tmp_path, monkeypatch) -> None:
    """A stand-in `nvidia-smi` on PATH that prints captured H200 lines: the sampler asks
    for the fields, keeps its output untouched, and stops it after the suite."""
    from registry.executor.gpu import FIELDS, Sampler, parse

    captured = (ROOT / "tests/data/gpu-samples/h200x1-20261201-second.csv").read_text()
    busy = [line for line in captured.splitlines()[400:410]]
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args\"\n"
                    + "".join(f"echo '{line}'\n" for line in busy) + "exec sleep 30\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:/usr/bin:/bin")
    sampler = Sampler(tmp_path / "gpu-samples.csv")
    sampler.start()
    import time

    for _ in range(50):
        if len((tmp_path / "gpu-samples.csv").read_text().splitlines()) == len(busy):
            break
        time.sleep(0.1)
    sampler.stop()
    assert sampler.process is not None and sampler.process.returncode is not None
    assert f"--query-gpu={','.join(FIELDS)}" in (tool.parent / "args").read_text()
    assert len(parse((tmp_path / "gpu-samples.csv").read_text())) == len(busy)
    Sampler(tmp_path / "none.csv")  # without the tool: nothing started, nothing written
    monkeypatch.setenv("PATH", "/nonexistent")
    quiet = Sampler(tmp_path / "none.csv")
    quiet.start()
    quiet.stop()
    assert not (tmp_path / "none.csv").exists()
