"""Capsules without an engine log (issue 35): a record kept as its claims, a results JSON
with an env file. Each imports as an unproven record with its published figures, never
refused; declared values are held, never resolved without proof. The packets are the
lab's own (tests/data/lab-claims/README.md: copied byte for byte, checked)."""

from __future__ import annotations

import json

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
