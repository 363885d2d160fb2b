"""`registry claim import`: the lab's 17 claims with their evidence packets, byte-exact
from steveseguin/b70-optimization-lab (tests/data/lab-claims/README.md), each with
its figure, metric verbatim, claimant, status, full history, verification figure and
packet; figures re-derived where the packet holds rows; the importer's fixes."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
LAB = ROOT / "tests" / "data" / "lab-claims"
CLAIMS = sorted(p.name for p in LAB.iterdir() if (p / "claim.json").is_file())
LLAMA_CPP = {"lab-gemma4-26b-a4b-q8xl-mtp3-1b70", "lab-muse-glimmer-30b-q8-dflash-tp4",
             "lab-qwen3-30b-a3b-2507-q4-1b70", "lab-qwen38-27b-q4km-tp1",
             "sergiiob-muse-glimmer-30b-q4-gguf-dflash-n2"}


def run(cli, *args):
    r = cli(*args)
    assert "Traceback" not in r.stderr
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout) if r.stdout.startswith(("{", "[")) else r.stdout


@pytest.fixture
def imported(cli, store_home):
    return run(cli, "claim", "import", LAB, "--json")


def test_all_17_claims_are_represented_as_the_lab_wrote_them(cli, imported) -> None:
    assert len(CLAIMS) == 17 and imported["added"] == 17
    listed = {c["id"]: c for c in run(cli, "claim", "list", "--json")}
    assert sorted(listed) == CLAIMS
    for name in CLAIMS:
        lab = json.loads((LAB / name / "claim.json").read_text())
        c = listed[lab["id"]]
        assert c["status"] == lab["status"], name
        assert c["claimed"]["value"] == lab["claimed"]["tok_s"]
        assert c["claimed"]["metric"].startswith(lab["claimed"]["metric"])  # verbatim first
        assert c["claimed"]["by"] == lab["claimed"]["by"]
        assert c["claimed"].get("date") == lab["claimed"].get("date")
        assert [(h["date"], h["event"]) for h in c["history"]] == [
            (h["date"], h["event"]) for h in lab["history"]]  # the file's order, whole
        assert all(h["by"] == f"lab ({name}/claim.json)" for h in c["history"])
        v = lab.get("verification")
        if v:
            assert c["verification"]["value"] == v["tok_s"]
            assert c["verification"]["metric"].startswith(v["metric"])
            assert c["verification"]["evidence"] == v["evidence"]
        else:
            assert c["verification"] == {}
        assert c["evidence_level"]["level"] in ("community-reported", "invalid")
        assert c["evidence_level"]["reason"]


def test_the_metric_names_a_formula_only_when_its_words_do(cli, imported) -> None:
    listed = {c["id"]: c for c in run(cli, "claim", "list", "--json")}
    laguna = listed["lab-laguna-s-21-int4-dflash-tp4"]["claimed"]["metric"]
    assert laguna == "typical decode rate, first 100 words of a fresh answer"  # nothing named
    q4km = listed["lab-qwen38-27b-q4km-tp1"]["claimed"]["metric"]
    assert q4km.endswith("[median-of-prompt-class-medians; 99 / (t[99] - t[0])]")
    assert listed["lab-minimax-m27-autoround-int4-tp4"]["claimed"]["metric"].endswith("[mean]")
    assert "100 / (t[99]" not in json.dumps(listed)  # no figure is given the legacy formula


def test_figures_are_rederived_where_the_packet_holds_rows(imported) -> None:
    by_id = {c["id"]: c for c in imported["claims"]}
    expected = {  # claim -> (what, aggregation, per-row series, the aggregate itself)
        "dominick253-qwen36-27b-fp8-tp2": ("verification", "median",
                                           "validation/bench-20260725T163224Z.json: "
                                           "rows[].decode_tok_s", 30.1709),
        "lab-minimax-m27-autoround-int4-tp4": ("verification", "mean",
                                               "results/promoted-strict-summary-20260519.json: "
                                               "benchmarks[].output_tokens_per_second",
                                               89.31419538094707),
        "lab-muse-glimmer-30b-q8-dflash-tp4": ("verification", "mean",
                                               "evidence/canonical-full256-two-runs.jsonl: "
                                               "prompts[].gen_tok_s", 100.3685),
    }
    for cid, (what, how, series, value) in expected.items():
        found = [r for r in by_id[cid]["packet"]["rederived"] if r["what"] == what]
        assert [(r["aggregation"], r["series"]) for r in found] == [(how, series)], cid
        assert found[0]["value"] == pytest.approx(value, rel=1e-12) and found[0]["agrees"]
    assert by_id["dominick253-qwen36-27b-fp8-tp2"]["packet"]["rederived"][0]["rows"] == 15
    for cid, c in by_id.items():
        if cid not in expected:
            assert c["packet"].get("rederived", []) == [], cid


def test_markdown_packets_are_claims_without_rows(imported) -> None:
    by_id = {c["id"]: c for c in imported["claims"]}
    laguna = by_id["lab-laguna-s-21-int4-dflash-tp4"]
    assert laguna["rows"] == 0 and laguna["records"] == []
    assert [f["kind"] for f in laguna["packet"]["files"]] == ["markdown"]
    assert "no per-row values" in laguna["note"]
    qwen3 = by_id["lab-qwen3-30b-a3b-2507-q4-1b70"]["packet"]["hits"]["verification"]
    assert qwen3[0]["source"] == "README.md"  # 107.48388363267362 written as 107.48


def test_community_entries_keep_the_contributor_apart(cli, imported) -> None:
    by_id = {c["id"]: c for c in imported["claims"]}
    tp1 = by_id["sergiiob-qwen38-27b-gptq-int4-mtp4-tp1"]
    assert tp1["lab_level"] == "B70-tested"
    who = {f["path"]: f["by"] for f in tp1["packet"]["files"]}
    assert who["reported/vllm-qwen38-mtp4-gptq-int4.json"] == "contributor"
    assert who["validation/2026-08-16-quality-kv-dtype-summary.json"] == "lab"
    assert tp1["records"] == []  # reported/ is never imported as the lab's evidence
    hit = tp1["packet"]["hits"]["verification"][0]
    assert hit["key"] == "gptq.nativeFp16Kv.mtp4MedianTokS" and round(hit["value"], 3) == 87.605
    shown = run(cli, "claim", "show", "dominick253-qwen36-27b-fp8-tp2", "--json")
    assert shown["lab_level"] == "B70-tested"
    assert shown["verification"]["record"] == by_id["dominick253-qwen36-27b-fp8-tp2"][
        "records"][0]


def test_imported_records_guess_no_identity(cli, imported) -> None:
    """The vLLM harness log's tail resolves no field (every one stays unresolved rather
    than wrong); the Muse packet's llama-server log resolves what its own lines prove:
    Q8_0 tensors under a `Q4_K - Medium` label, f16 K and V, DFlash with n_max 15 over
    four devices, and its launcher's arguments confirmed against the log."""
    by_id = {c["id"]: c for c in imported["claims"]}

    def fields(cid: str) -> dict:
        [rid] = by_id[cid]["records"]
        shown = run(cli, "show", rid, "--json")
        return shown["statement"]["predicate"]["identity"]["fields"]

    vllm = fields("dominick253-qwen36-27b-fp8-tp2")
    assert vllm and all(f.get("resolved") is None for f in vllm.values())
    muse = {k: f.get("resolved") for k, f in fields("lab-muse-glimmer-30b-q8-dflash-tp4").items()}
    assert {k: muse[k] for k in ("engine.name", "precision.weights", "precision.kv_cache_k",
                                 "precision.kv_cache_v", "spec.method", "spec.n_max",
                                 "parallel.devices", "kv.cells")} == {
        "engine.name": "llama.cpp", "precision.weights": "Q8_0", "precision.kv_cache_k": "f16",
        "precision.kv_cache_v": "f16", "spec.method": "draft-dflash", "spec.n_max": 15,
        "parallel.devices": 4, "kv.cells": 32768}
    for cid in LLAMA_CPP:
        assert len(by_id[cid]["records"]) <= 1


def test_importing_again_adds_nothing_and_verifies(cli, imported) -> None:
    again = run(cli, "claim", "import", LAB, "--json")
    assert again["added"] == 0 and len(again["claims"]) == 17
    assert run(cli, "verify", "--all", "--json")["exit_code"] == 0
    one = run(cli, "claim", "import", LAB / CLAIMS[0] / "claim.json", "--json")
    assert one["added"] == 0


def test_a_lab_checkout_resolves_evidence_paths(cli, store_home, tmp_path) -> None:
    """claims/<id>.json at the checkout root, each evidence path resolved from it."""
    checkout = tmp_path / "lab"
    (checkout / "claims").mkdir(parents=True)
    name = "dominick253-qwen36-27b-fp8-tp2"
    packet = checkout / "community" / "dominick253-qwen36-27b-fp8-tp2-docker"
    shutil.copytree(LAB / name, packet)
    (packet / "claim.json").rename(checkout / "claims" / f"{name}.json")
    done = run(cli, "claim", "import", checkout, "--json")
    [c] = done["claims"]
    assert c["packet"]["root"] == "dominick253-qwen36-27b-fp8-tp2-docker"
    assert c["rows"] == 30 and len(c["records"]) == 1
    listed = run(cli, "claim", "show", name, "--json")
    assert listed["history"][0]["by"] == f"lab (claims/{name}.json)"


def test_a_hostile_evidence_path_is_refused_before_anything_is_written(cli, store_home,
                                                                      tmp_path) -> None:
    checkout = tmp_path / "lab"
    (checkout / "claims").mkdir(parents=True)
    good = json.loads((LAB / CLAIMS[0] / "claim.json").read_text())
    (checkout / "claims" / "a.json").write_text(json.dumps(good))
    bad = {**good, "id": "b", "verification": {"tok_s": 1, "evidence": "../../../etc"}}
    (checkout / "claims" / "b.json").write_text(json.dumps(bad))
    r = cli("claim", "import", checkout)
    assert r.exit_code == 4 and "must stay inside" in r.stderr and "Traceback" not in r.stderr
    assert run(cli, "claim", "list", "--json") == []
    (checkout / "claims" / "b.json").write_text("{not json")
    r = cli("claim", "import", checkout)
    assert r.exit_code == 4 and "b.json" in r.stderr
    assert run(cli, "claim", "list", "--json") == []


# ---- the importer's fixes ----

def test_a_healthy_harness_log_is_not_a_failed_run(cli, store_home, tmp_path) -> None:
    """The lab's validate-<stamp>.log: a harness log with a 25-line APIServer tail whose
    server was healthy after ~110 s and served 15 rows. Without those lines (a control)
    it is the log of an engine that never became ready."""
    packet = shutil.copytree(LAB / "dominick253-qwen36-27b-fp8-tp2" / "validation",
                             tmp_path / "validation")
    done = run(cli, "import", packet, "--json")
    states = [run(cli, "show", d["record"]["id"], "--json")["statement"]["predicate"]["run"]
              for d in done]
    assert states and all(s["state"] != "failed" for s in states), states
    control = tmp_path / "control"
    control.mkdir()
    log = (packet / "validate-20260725T163224Z.log").read_text().splitlines(keepends=True)
    kept = [line for line in log if "healthy after" not in line and "POST /v1/" not in line]
    (control / "validate-20260725T163224Z.log").write_text("".join(kept))
    [failed] = run(cli, "import", control, "--json")
    run_info = run(cli, "show", failed["record"]["id"], "--json")["statement"]["predicate"]["run"]
    assert run_info["state"] == "failed" and "never reported ready" in run_info["reason"]


def test_a_summary_that_is_not_a_run_is_not_an_arm(cli, store_home) -> None:
    # the packet's quality summary is no run's: only its claim publishes figures
    [done] = run(cli, "import", LAB / "sergiiob-qwen38-27b-gptq-int4-mtp4-tp1", "--json")
    assert {f["source"] for f in done["published"]} == {"claim.json"}


def test_a_packet_claim_json_is_read_with_its_metric(cli, store_home) -> None:
    [done] = run(cli, "import", LAB / "dominick253-qwen36-27b-fp8-tp2", "--json")
    published = {f["key"]: f for f in run(cli, "show", done["record"]["id"], "--json")[
        "statement"]["predicate"]["published"]}
    assert published["verification.tok_s"]["aggregation"] == "claim: median"
    assert published["claimed.tok_s"]["aggregation"] == "claim: unnamed"
    assert "top of their 28.3-34.7 range" in published["claimed.tok_s"]["note"]


def test_a_file_in_a_large_folder_is_its_own_packet(cli, store_home, tmp_path) -> None:
    """`results/scoreboard.md` names one file of the lab's whole results/ folder: the
    packet is that file, and nothing around it is imported as a record."""
    checkout = tmp_path / "lab"
    (checkout / "claims").mkdir(parents=True)
    name = "lab-qwen36-27b-autoround-int4-mtp3-tp2"
    shutil.copy(LAB / name / "claim.json", checkout / "claims" / f"{name}.json")
    results = checkout / "results"
    results.mkdir()
    shutil.copy(LAB / name / "scoreboard.md", results / "scoreboard.md")
    (results / "other-lane").mkdir()
    (results / "other-lane" / "server.log").write_text("INFO another lane's engine\n")
    [c] = run(cli, "claim", "import", checkout, "--json")["claims"]
    assert [f["path"] for f in c["packet"]["files"]] == ["scoreboard.md"]
    assert c["records"] == [] and "one file of a larger folder" in c["note"]


def test_every_view_states_the_lab_word_beside_the_derived_one(cli, imported) -> None:
    """Issue 36 item 2: what the lab's file states (status, level, figure, its metric in
    its words) beside what the registry derives (level with its reason, the figure
    re-derived from rows or why not), one level per claim in list, show and review."""
    listed = {c["id"]: c for c in run(cli, "claim", "list", "--json")}
    for name in CLAIMS:
        lab = json.loads((LAB / name / "claim.json").read_text())
        c = listed[lab["id"]]
        said = (lab.get("verification") or {}).get("tok_s", lab["claimed"]["tok_s"])
        assert c["lab"]["status"] == lab["status"] and c["lab"]["figure"] == said
        assert c["lab"]["metric"].startswith("tok_s: ")
        d = c["derived"]
        assert d["level"] == c["evidence_level"] and d["level"]["reason"]
        assert ("figure" in d) != ("not_rederived" in d), name  # a figure, or why not
        shown = run(cli, "claim", "show", lab["id"], "--json")
        assert shown["derived"] == d and shown["lab"] == c["lab"]
    muse = listed["lab-muse-glimmer-30b-q8-dflash-tp4"]
    assert muse["derived"]["figure"] == pytest.approx(100.3685, rel=1e-9)
    assert "canonical-full256-two-runs.jsonl" in muse["derived"]["series"]
    text = run(cli, "claim", "show", muse["id"])
    assert "lab says  status lab-verified" in text and "re-derived from the packet" in text
    assert "None" not in text
    [rid] = imported["claims"][[c["id"] for c in imported["claims"]].index(muse["id"])][
        "records"]
    review = cli("review", rid, "--no-seal", "--json")
    found = json.loads(review.stdout)
    claims = [f for f in found["findings"] if f["part"] == "claim"]
    assert claims == [{"part": "claim", "status": "note", "detail": (
        f"{muse['id']}: level {muse['derived']['level']['level']} "
        f"({muse['derived']['level']['reason']})")}]
    assert found["verdict"] != "reject"  # no rows is not judged, never rejected
