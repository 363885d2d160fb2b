"""`registry diff` on the lab's BF16/FP8 KV A/B: -4.132% decode, 2.00x cache tokens,
the KV precision the only identity change, and the bitwise comparison refused."""

from __future__ import annotations

import json
import statistics

import pytest

from registry.compare.diff import diff
from registry.compare.sides import side_from_run_dir
from registry.store.ledger import folder_at
from tests.ab_runs import make_ab_run

KV_AXES = {"precision.kv_cache", "precision.kv_scales", "precision.draft_kv_cache"}


@pytest.fixture
def ab(tmp_path):
    return make_ab_run(tmp_path, "bf16"), make_ab_run(tmp_path, "fp8")


def _metric(d, name):
    return next(m for m in d.metrics if m.name == name)


def test_ab_run_directories(ab) -> None:
    d = diff(side_from_run_dir(ab[0]), side_from_run_dir(ab[1]))
    assert "precision.kv_cache" in d.changed["identity"]
    assert set(d.changed["identity"]) <= KV_AXES
    decode = _metric(d, "decode_tok_s.median")
    assert decode.a == pytest.approx(48.980858) and decode.b == pytest.approx(46.956936)
    assert f"{decode.relative * 100:+.3f}%" == "-4.132%"
    assert decode.formula_a == decode.formula_b == (
        "median over unflagged rows of 99 / (t[99] - t[0])")
    capacity = _metric(d, "kv.capacity_tokens")
    assert (capacity.a, capacity.b) == (110995, 221990)
    assert f"{capacity.ratio:.2f}x" == "2.00x"
    bitwise = next(c for c in d.contracts if c.contract == "bitwise-teacher")
    assert not bitwise.comparable
    assert any("precision.kv_cache bfloat16 vs fp8_e4m3" in r
               and "Never use BF16 token hashes as an expected FP8 bitwise gate" in r
               for r in bitwise.reasons)
    differing = [o for o in d.outputs if not o.equal]
    assert [o.prompt_id for o in differing] == ["prompt-00", "prompt-02", "prompt-05", "prompt-09"]
    assert {o.first_diff_index for o in differing} == {11}


def test_precision_axes_are_always_shown(ab) -> None:
    d = diff(side_from_run_dir(ab[0]), side_from_run_dir(ab[0]))
    assert not any(f.changed for f in d.identity)
    shown = {f.name for f in d.identity}
    assert {"precision.weights", "precision.kv_cache", "precision.draft_kv_cache"} <= shown
    assert all(c.comparable for c in d.contracts)


def test_formulas_that_differ_are_flagged_not_compared(ab, tmp_path) -> None:
    recipe = json.loads((ab[1] / "recipe.json").read_text())
    recipe["benchmark"]["metric"] = "100 / (t[99] - t[0])"
    (ab[1] / "recipe.json").write_text(json.dumps(recipe))
    d = diff(side_from_run_dir(ab[0]), side_from_run_dir(ab[1]))
    decode = _metric(d, "decode_tok_s.median")
    assert not decode.comparable and decode.relative is None
    assert decode.note == "formulas differ: not compared"


def test_sealed_records_by_id_prefix(ab, store_home, cli) -> None:
    from registry.seal import seal_run

    ids = [seal_run(run, home=store_home).id for run in ab]
    r = cli("diff", ids[0][:10], ids[1][:10], "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["a"] == ids[0] and d["b"] == ids[1]
    assert set(d["changed"]["identity"]) <= KV_AXES
    decode = next(m for m in d["metrics"] if m["name"] == "decode_tok_s.median")
    assert round(decode["relative"] * 100, 3) == -4.132
    human = cli("diff", ids[0][:10], ids[1][:10])
    assert human.exit_code == 0
    assert "-4.13%" in human.stdout and "2.00x" in human.stdout and "REFUSED" in human.stdout


def test_unknown_record_is_a_clear_error(store_home, cli) -> None:
    r = cli("diff", "deadbeef", "cafebabe")
    assert r.exit_code == 5 and "no record" in r.stderr


def _statement(home, rid):
    return folder_at(home.ledger, rid) / "statement.json"


def test_a_record_whose_statement_was_edited_is_not_compared(ab, store_home, cli) -> None:
    """A forged median in the statement never reaches the diff: the statement no longer
    hashes to its id; the figures shown are re-derived from the rows."""
    from registry.seal import seal_run

    ids = [seal_run(run, home=store_home).id for run in ab]
    path = _statement(store_home, ids[1])
    statement = json.loads(path.read_bytes())
    statement["predicate"]["results"][0]["metrics"]["decode_tok_s.median"]["value"] = 99999.0
    path.write_text(json.dumps(statement))
    r = cli("diff", ids[0], ids[1], "--json")
    assert r.exit_code == 1 and "statement no longer hashes to its id" in r.stderr
    assert ids[1][:12] in r.stderr and not r.stdout


def test_a_record_whose_rows_were_changed_is_not_compared(ab, store_home, cli) -> None:
    from registry.seal import seal_run
    from registry.store.objects import ObjectStore

    ids = [seal_run(run, home=store_home).id for run in ab]
    subjects = json.loads(_statement(store_home, ids[0]).read_bytes())["subject"]
    bench = ObjectStore(store_home.objects).path(
        next(s["digest"]["sha256"] for s in subjects if s["name"] == "bench.json"))
    bench.chmod(0o644)
    bench.write_bytes(bench.read_bytes().replace(b'"token_ids":[', b'"token_ids":[7,', 1))
    r = cli("diff", ids[0], ids[1])
    assert r.exit_code == 1 and "bench.json was changed after sealing" in r.stderr


def test_sealed_figures_are_re_derived_from_the_rows(ab, store_home) -> None:
    from registry.compare.sides import side_from_record
    from registry.seal import seal_run

    side = side_from_record(store_home, seal_run(ab[1], home=store_home).id)
    rates = [99 / (r.token_times_s[99] - r.token_times_s[0]) for r in side.rows]
    assert side.results[0].metrics["decode_tok_s.median"].value == pytest.approx(
        statistics.median(rates))
