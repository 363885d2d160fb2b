"""Capsules without an engine log (issue 35): a record kept as its claims, a results JSON
with an env file. Each imports as an unproven record with its published figures, never
refused; declared values are held, never resolved without proof. The packets are the
lab's own (tests/data/lab-claims/README.md: copied byte for byte, checked)."""

from __future__ import annotations

import json
import shutil

from tests.conftest import ROOT
from tests.test_claim_import import LAB

CLAIMS_ONLY = LAB / "lab-qwen38-27b-q4km-tp1"  # claim.json + a quality-battery note
RESULTS_ENV = LAB / "lab-minimax-m27-autoround-int4-tp4"  # results/*-summary-*.json + .env


def _import(cli, capsule) -> tuple[dict, dict]:
    r = cli("import", str(capsule), "--json")
    assert r.exit_code == 0 and "Traceback" not in r.stderr, r.stderr
    [done] = json.loads(r.stdout)
    shown = json.loads(cli("show", done["record"]["id"], "--json").stdout)
    return done, shown["statement"]["predicate"]


def test_a_record_kept_as_its_claims_is_an_unproven_record(cli, store_home) -> None:
    done, p = _import(cli, CLAIMS_ONLY)
    assert done["state"] == "unknown" and p["results"] == []
    assert [(f["key"], f["value"]) for f in done["published"]] == [
        ("claimed.tok_s", 27.83), ("verification.tok_s", 27.83)]
    assert all(f.get("resolved") is None for f in p["identity"]["fields"].values())
    assert any("no engine log" in n for n in p["identity"]["notes"])


def test_a_claims_only_packet_is_still_no_record_of_its_own_claim(cli, store_home) -> None:
    r = cli("claim", "import", str(CLAIMS_ONLY), "--json")
    assert r.exit_code == 0, r.stderr
    [claim] = json.loads(r.stdout)["claims"]
    assert claim["records"] == [] and "holds no run evidence" in claim["note"]  # a claim
    assert json.loads(cli("list", "--json").stdout) == []  # the claim is not its own evidence


def test_a_results_json_with_an_env_file(cli, store_home) -> None:
    done, p = _import(cli, RESULTS_ENV)
    figures = {(f["source"], f["key"]): f for f in done["published"]}
    mean = figures[("results/promoted-strict-summary-20260519.json",
                    "mean_output_toks_per_second")]
    assert mean["value"] == 89.31419538094708 and mean["aggregation"] == "mean"
    assert "rederived" not in mean and "not re-derived" in mean["note"]
    fields = p["identity"]["fields"]
    # declared by the env file (`TP=4`, `DTYPE=float16`), never resolved without a log
    assert fields["parallel.tensor"]["declared"] == 4
    assert fields["precision.dtype"]["declared"] == "float16"
    assert p["imported"]["declared_by"]["parallel.tensor"] == "configs/bench-89.env"
    assert all(f["status"] == "unresolved" for f in fields.values() if "declared" in f)


# Two more shapes of the lab's (tests/data/lab/README.md: real copies, byte for byte)
SCREEN = ROOT / "tests/data/lab/qwen38-flash-next-fp8-screen"  # one data JSON + its notes
SUMMARY_ONLY = ROOT / "tests/data/lab/minimax-m27-110tps-summary-only"


def test_a_screen_with_one_data_json_and_notes(cli, store_home) -> None:
    done, p = _import(cli, SCREEN)
    assert done["state"] == "unknown" and p["results"] == []
    figures = {f["key"]: f for f in done["published"]}
    legacy = figures["realistic_suite.median_tok_s_1_100_legacy_inclusive_events"]
    assert (legacy["value"], legacy["metric"], legacy["aggregation"]) == (
        4.494109540754577, "decode_tok_s", "median")
    assert legacy["formula"] == "100 / (t[99] - t[0])" and "no raw rows" in legacy["note"]
    assert figures["realistic_suite.median_tok_s_1_100_intervals_after_ttft"]["formula"] == \
        "99 / (t[99] - t[0])"
    fields = p["identity"]["fields"]
    # the receipt's own identity block declares; nothing resolves without a log
    assert fields["parallel.tensor"]["declared"] == 4
    assert fields["runtime.max_model_len"]["declared"] == 1536
    assert fields["model.revision"]["declared"] == "bcd9f01ddc9cff2316eb84281bebcd5b058bddce"
    assert fields["engine.commit"]["declared"] == "658965050f259999e635b52a850004a3771cd644"
    assert all(f["status"] == "unresolved" for f in fields.values())
    assert p["imported"]["declared_by"]["parallel.tensor"] == \
        "data/20260827-tp4-mtp0-1536-context-screen.json: identity"


def test_a_run_published_only_as_a_results_summary(cli, store_home, tmp_path) -> None:
    capsule = tmp_path / SUMMARY_ONLY.name
    (capsule / "results").mkdir(parents=True)
    for name in ("README.md", "results/summary-20260523.json"):  # the summary and its README
        shutil.copy(SUMMARY_ONLY / name, capsule / name)
    done, p = _import(cli, capsule)
    figures = {f["key"]: f for f in done["published"]}
    assert figures["mean_output_tokens_per_second"]["value"] == 83.1721843269714
    assert figures["mean_total_tokens_per_second"]["metric"] == "total_tok_s"
    model = p["identity"]["fields"]["model.path"]
    # the summary names the model; so does the README (a declaration, never resolved)
    assert model == {**model, "declared": "Lasimeri/MiniMax-M2.7-int4-AutoRound",
                     "status": "unresolved"}
    assert model.get("resolved") is None


def test_the_readme_declares_the_model_when_nothing_else_does(cli, store_home, tmp_path) -> None:
    capsule = tmp_path / "readme-and-env"
    (capsule / "configs").mkdir(parents=True)
    for name in ("README.md", "configs/bench.env"):
        shutil.copy(SUMMARY_ONLY / name, capsule / name)
    (capsule / "summary.json").write_text(json.dumps({"mean_output_tokens_per_second": 1.0}))
    _, p = _import(cli, capsule)
    assert p["imported"]["declared_by"]["model.path"] == "README.md:5"
    assert p["imported"]["declared_by"]["parallel.tensor"] == "configs/bench.env"


def test_show_names_a_declaration_the_log_contradicts(cli, store_home, tmp_path) -> None:
    """Another run's launch (piecewise graphs) beside an eager log: `show` says both values
    and where each is."""
    from tests.test_activations import LAB_LAUNCH, QWEN_LOG

    capsule = tmp_path / "mismatch"
    capsule.mkdir()
    shutil.copy(QWEN_LOG, capsule / "server.log")
    shutil.copy(LAB_LAUNCH, capsule / "launch.json")
    done, p = _import(cli, capsule)
    mode = p["identity"]["fields"]["graph.cudagraph_mode"]
    assert (mode["declared"], mode["resolved"], mode["status"]) == ("PIECEWISE", "NONE",
                                                                    "mismatch")
    shown = " ".join(cli("show", done["record"]["id"]).stdout.split())
    assert "finding: graph.cudagraph_mode: declared PIECEWISE (launch.json: argv), " \
           "evidence NONE (server.log:30)" in shown
