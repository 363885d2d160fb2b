"""Issue 23 item 6: physically impossible measurements (negative or non-monotonic times,
ITLs summing past the end-to-end latency) are refused at import and at seal with one
message naming the row, nothing written; `review` flags records sealed before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from registry.formats.rundir import BenchRow
from registry.measure.physical import row_problem
from tests.conftest import ROOT

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
CAPTURED = ROOT / "tests" / "data" / "vllm-bench"


def _result(tmp_path: Path, edit) -> Path:
    data = json.loads((CAPTURED / "result.json").read_text())
    edit(data)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    return path


def _negated(data: dict) -> None:
    data["ttfts"] = [-t for t in data["ttfts"]]
    data["itls"] = [[-g for g in gaps] for gaps in data["itls"]]


def test_a_vllm_bench_result_with_negated_ttfts_is_refused(cli, store_home, tmp_path) -> None:
    result = _result(tmp_path, _negated)
    r = cli("bench-import", result, "--log", CAPTURED / "server.log", "--out", tmp_path / "run")
    assert r.exit_code == 4 and "Traceback" not in r.stderr
    assert "result.json: request 0: ttft -0.12358413300012216 s is negative" in r.stderr
    assert not (tmp_path / "run").exists()


def test_itls_past_the_end_to_end_latency_are_refused(cli, store_home, tmp_path) -> None:
    def shorter(data: dict) -> None:
        data["latencies"][3] = data["ttfts"][3] / 2

    r = cli("bench-import", _result(tmp_path, shorter), "--log", CAPTURED / "server.log",
            "--out", tmp_path / "run")
    assert r.exit_code == 4 and "request 3: ttft + sum(itls)" in r.stderr
    assert "passes the end-to-end latency" in r.stderr and not (tmp_path / "run").exists()
    good = cli("bench-import", CAPTURED / "result.json", "--log", CAPTURED / "server.log",
               "--out", tmp_path / "good")
    assert good.exit_code == 0, good.stderr  # the real result itself is possible


def _backwards(run: Path, row: int = 1) -> None:
    bench = json.loads((run / "bench.json").read_text())
    times = bench["rows"][row]["token_times_s"]
    times[50], times[51] = times[51], times[50]
    (run / "bench.json").write_text(json.dumps(bench))


def test_seal_refuses_time_going_backwards_and_writes_nothing(cli, store_home, make_run) -> None:
    from registry.store.ledger import Ledger

    run = make_run("back")
    _backwards(run)
    before = Ledger(store_home.ledger).head()
    r = cli("seal", run, "--recipe", ROOT / "recipes" / "tiny-bf16-kv.toml",
            "--allow-unproven", "the test's run")
    assert r.exit_code == 4 and "Traceback" not in r.stderr, r.stderr
    assert "row 1 (p1, suite tiny-cold): token_times_s[51]" in r.stderr
    assert "time went backwards" in r.stderr
    assert Ledger(store_home.ledger).head() == before


def test_review_flags_a_record_sealed_before_the_rule(cli, store_home, make_run, seal_run_dir,
                                                      monkeypatch) -> None:
    import registry.measure.physical as physical

    run = make_run("old")
    _backwards(run, row=2)
    with monkeypatch.context() as m:  # a seal made before the rule
        m.setattr(physical, "refuse_rows", lambda rows, source: None)
        rid = seal_run_dir(run).id
    r = cli("review", rid, "--json", "--no-seal")
    assert r.stdout.startswith("{"), (r.exit_code, r.stderr)
    review = json.loads(r.stdout)
    [timing] = [f for f in review["findings"] if f["part"] == "timings"]
    assert timing["status"] == "reject" and "row 2 (p2)" in timing["detail"]
    assert review["verdict"] == "reject"


@pytest.mark.parametrize(("times", "why"), [
    ([0.1, 0.2, 0.3], None), ([-0.5, 0.2], "token_times_s[0] is -0.5 s"),
    ([0.1, 0.3, 0.2], "token_times_s[2] is 0.2 s, earlier than"),
    ([0.1, float("nan")], "token_times_s[1] is nan"), ([0.1, 0.1, 0.1], None)])
def test_the_rule_on_one_row(database_url, times, why) -> None:
    row = BenchRow(suite="s", index=0, prompt_id="p", prompt_sha256="", token_times_s=times)
    found = row_problem(row)
    assert (found is None) if why is None else (found is not None and found.startswith(why))


def test_the_lab_rows_are_checked_at_import(database_url, tmp_path) -> None:
    from registry.errors import InvalidInput
    from registry.importer.labbench import convert_bench

    capsule = shutil.copytree(ROOT / "tests" / "data" / "lab" / "laguna-b70-record",
                              tmp_path / "laguna")
    [rows] = [p for p in capsule.rglob("*.json") if p.name.endswith("strict-performance.json")
              or p.name == "bench.json"][:1]
    data = json.loads(rows.read_text())
    convert_bench(rows)  # as the lab wrote it: possible
    first, key = data["rows"][0], "token_id_offsets_s"  # the lab's per-token offsets
    first[key] = [-abs(x) - 1 for x in first[key]]
    rows.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match="row 0"):
        convert_bench(rows)
