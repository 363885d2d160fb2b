"""`registry import` of real lab capsules of other layouts (tests/data/lab/README.md):
several arms under one root `SHA256SUMS`, run-id named launch files, an engine that
died while loading, a failed qualification with a JSON manifest; a folder of them in
one call; the lab's published figures beside their re-derivation."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from registry.errors import ExitCode
from tests.conftest import FIXTURES

ARMS = FIXTURES / "qwen36-27b-int4-validation-arms"
RUN_ID = FIXTURES / "qwen38-27b-fp8-run-id-files"
DIED = FIXTURES / "qwen38-flash-next-fp8-died-loading"
UNQUALIFIED = FIXTURES / "minicpm5-2b-unqualified"
LAGUNA = FIXTURES / "laguna-b70-record"
CAPSULES = [LAGUNA, ARMS, RUN_ID, DIED, UNQUALIFIED]


def imports(cli, *args) -> list[dict]:
    r = cli("import", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def statement(cli, rid: str) -> dict:
    return json.loads(cli("show", rid, "--json").stdout)["statement"]["predicate"]


def copy(capsule: Path, to: Path) -> Path:
    shutil.copytree(capsule, to, symlinks=True)
    return to


@pytest.mark.parametrize("capsule", CAPSULES, ids=lambda c: c.name)
def test_every_lab_capsule_imports_without_a_recipe(cli, store_home, capsule) -> None:
    for done in imports(cli, capsule):
        p = statement(cli, done["record"]["id"])
        assert "recipe" not in p and p["imported"]["importer"]
        for name, field in p["identity"]["fields"].items():
            assert field["status"] != "mismatch", name  # right or unresolved, never wrong
            if "declared" in field:
                assert name in p["imported"]["declared_by"]
        for figure in p["published"]:  # re-derived exactly wherever the rows exist
            if "rederived" in figure:
                assert math.isclose(figure["value"], figure["rederived"], rel_tol=1e-9), figure
                assert figure["agrees"] is True


def test_arms_under_one_manifest_are_one_record_each(cli, store_home) -> None:
    done = imports(cli, ARMS)
    assert [d["arm"] for d in done] == ["nospec-01a", "spec-01a"]
    nospec, spec = (statement(cli, d["record"]["id"])["imported"] for d in done)
    assert nospec["arms"] == spec["arms"] == ["nospec-01a", "spec-01a"]
    assert nospec["manifest"] == spec["manifest"] == "SHA256SUMS"
    assert nospec["manifest_sha256"] == spec["manifest_sha256"]
    assert "spec-01a/run/identity.env" in spec["verified"]
    assert "spec-01a/run/identity.env" not in nospec["verified"]
    assert "matrix.env" in nospec["verified"] and "matrix.env" in spec["verified"]  # shared
    assert "spec-01a/data/bench.json" in spec["missing"]
    assert "spec-01a/data/bench.json" not in nospec["missing"]


def test_declared_identity_names_its_file(cli, store_home) -> None:
    nospec, spec = (statement(cli, d["record"]["id"]) for d in imports(cli, ARMS))
    fields = spec["identity"]["fields"]
    assert fields["parallel.tensor"]["declared"] == 2
    assert spec["imported"]["declared_by"]["parallel.tensor"] == "spec-01a/run/identity.env"
    assert fields["spec.num_tokens"]["declared"] == 3
    assert fields["graph.cudagraph_mode"]["declared"] == "FULL_AND_PIECEWISE"
    # the nospec arm's file keeps num_speculative_tokens=3 with MTP off: not declared
    assert "declared" not in nospec["identity"]["fields"].get("spec.num_tokens", {})
    assert nospec["identity"]["fields"]["precision.dtype"]["declared"] == "float16"


def test_published_figures_without_rows_are_recorded_not_rederived(cli, store_home) -> None:
    spec = statement(cli, imports(cli, ARMS)[1]["record"]["id"])
    [median] = [f for f in spec["published"] if f["metric"] == "decode_tok_s"
                and f["aggregation"] == "median"]
    assert median["value"] == 99.76857989480479
    assert median["source"] == "spec-01a/data/summary-legacy.json"
    assert median["formula"] == "100 / (t[99] - t[0])"
    assert "rederived" not in median and "no raw rows" in median["note"]


def test_the_launch_command_line_declares_the_last_flag(cli, store_home) -> None:
    [done] = imports(cli, RUN_ID)
    p = statement(cli, done["record"]["id"])
    block = p["identity"]["fields"]["runtime.block_size"]
    assert block["declared"] == 896  # `--block-size 64 ... --block-size 896`: the last wins
    assert p["imported"]["declared_by"]["runtime.block_size"] == "tp1-mtp0-b896-launch.json: argv"
    assert done["arm"] == "tp1-mtp0-b896" and "manifest" not in p["imported"]
    assert p["run"]["started_at"] == "2026-09-17T14:32:38.407617+00:00"


def test_an_engine_that_died_while_loading_is_a_failed_record(cli, store_home) -> None:
    [done] = imports(cli, DIED)
    assert done["state"] == "failed"
    p = statement(cli, done["record"]["id"])
    assert p["run"]["state"] == "failed" and "never reported ready" in p["run"]["reason"]
    tp = p["identity"]["fields"]["parallel.tensor"]
    assert (tp["declared"], tp["resolved"], tp["status"]) == (4, 4, "confirmed")
    assert p["imported"]["declared_by"]["parallel.tensor"] == "server.log:7 (non-default args)"
    assert any("failed run" in f for f in done["findings"])


def test_a_failed_qualification_carries_the_labs_reason(cli, store_home) -> None:
    [done] = imports(cli, UNQUALIFIED)
    reason = statement(cli, done["record"]["id"])["run"]["reason"]
    assert done["state"] == "failed"
    assert "qualification-decision.json: status unqualified" in reason
    assert "ordered-dedup" in reason and "extract-json" in reason
    assert "subprocess exit 1" in reason
    i = done["imported"]
    assert i["manifest"] == "data/run4-evidence-sha256.json"
    assert sorted(i["verified"]) == ["data/campaign-run4/pilot-checks.json",
                                     "data/guard-run4/identity.json",
                                     "data/guard-run4/result.json", "data/guard-run4/test.log"]
    assert len(i["missing"]) == 6


def test_a_claim_the_rows_do_not_give_is_a_finding(cli, store_home, tmp_path) -> None:
    capsule = copy(LAGUNA, tmp_path / "laguna")
    (capsule / "claims").mkdir()
    (capsule / "claims" / "lab-laguna.json").write_text(json.dumps(
        {"claimed": {"tok_s": 101.97, "metric": "median first 100 tokens"},
         "verification": {"tok_s": 102.97, "metric": "lab re-run"}}))
    r = cli("import", capsule)
    assert r.exit_code == 0, r.stderr
    assert "finding: published decode_tok_s claim: median 101.97" in r.stdout
    [done] = imports(cli, capsule)
    claims = {f["key"]: f for f in done["published"] if f["aggregation"].startswith("claim")}
    assert claims["claimed.tok_s"]["agrees"] is False  # rows: 102.97143559613157
    # "lab re-run" names no formula: recorded under its own words, never re-derived
    assert "agrees" not in claims["verification.tok_s"]
    assert "names no re-derivable formula" in claims["verification.tok_s"]["note"]
    shown = cli("show", done["record"]["id"])
    assert "finding: published decode_tok_s claim: median 101.97" in shown.stdout
    other = imports(cli, LAGUNA)[0]["record"]["id"]
    d = json.loads(cli("diff", other, done["record"]["id"], "--json").stdout)
    [pair] = [x for x in d["published"] if x["aggregation"] == "claim: median"]
    assert "a" not in pair and pair["b"]["agrees"] is False
    assert pair["b"]["rederived"] == 102.97143559613157  # re-derived again by diff
    assert "≠ FINDING" in cli("diff", other, done["record"]["id"]).stdout


def test_a_folder_of_capsules_in_one_call(cli, store_home, tmp_path) -> None:
    folder = tmp_path / "lab"
    for capsule in CAPSULES:
        copy(capsule, folder / capsule.name)
    (folder / "notes").mkdir()
    (folder / "notes" / "README.md").write_text("not a capsule\n")
    r = cli("import", folder, "--each", "--json")
    assert r.exit_code == 0, r.stderr
    done = json.loads(r.stdout)
    assert len(done["records"]) == 6 and not done.get("failed")
    assert [s["capsule"] for s in done["skipped"]] == ["notes"]
    again = json.loads(cli("import", folder, "--each", "--json").stdout)
    assert [x["record"]["id"] for x in again["records"]] == [
        x["record"]["id"] for x in done["records"]]
    assert all(x["already"] for x in again["records"])
    table = cli("import", folder, "--each").stdout
    assert "imported 6 records" in table and "skipped notes" in table


def test_one_bad_capsule_stops_only_itself(cli, store_home, tmp_path) -> None:
    folder = tmp_path / "lab"
    copy(DIED, folder / "a-died")
    bad = copy(ARMS, folder / "b-arms")
    (bad / "spec-01a" / "arm.env").write_text("mode=changed\n")
    r = cli("import", folder, "--each", "--json")
    assert r.exit_code == ExitCode.FAILED
    done = json.loads(r.stdout)
    assert [x["capsule"] for x in done["records"]] == ["a-died"]
    assert "does not match SHA256SUMS line" in done["failed"][0]["message"]
