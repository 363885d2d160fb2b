"""Verification attestations: `review` and `reproduce` seal their verdicts as signed
in-toto statements naming the records they judged; `show` lists them, `verify --all`
checks them; forged ones (plain git, an untrusted key, edited bytes) are refused; they
verify on a second home after a pull. Real git, real keys, no mocks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from registry.formats.verification import Check, Policy, Result, Verifier, verification
from tests.test_team import team  # noqa: F401  (the push/pull fixture)

SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _git(ledger: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ledger), "-c", "user.name=x", "-c", "user.email=x@x",
                    *args], check=True, capture_output=True)


@pytest.fixture
def two(seal_run_dir, make_run):
    return seal_run_dir(make_run("one")).id, seal_run_dir(make_run("two")).id


@SQLITE
def test_review_seals_its_verdict_and_show_lists_it(cli, store_home, two) -> None:
    rid = two[0]
    r = cli("review", rid, "--json")
    assert "Traceback" not in r.stderr
    review = json.loads(r.stdout)
    att = review["verification"]
    assert len(att) == 64 and review.get("not_sealed") is None
    shown = json.loads(cli("show", rid[:12], "--json").stdout)
    [v] = shown["verifications"]
    p = v["statement"]["predicate"]
    assert v["id"] == att and p["policy"]["name"] == "review" and p["records"] == {"reviewed": rid}
    assert v["statement"]["subject"] == [{"name": "record:reviewed", "digest": {"sha256": rid}}]
    expected = {"accept": "PASSED", "reject": "FAILED", "needs evidence": "INCONCLUSIVE"}
    assert p["result"] == expected[review["verdict"]]
    assert [c["name"] for c in p["checks"]] == [f["part"] for f in review["findings"]]
    assert json.loads(cli("show", two[1], "--json").stdout)["verifications"] == []
    report = json.loads(cli("verify", "--all", "--json").stdout)
    assert report["verifications"] == 1 and report["exit_code"] == 0
    assert "verifications" in cli("show", rid).stdout
    again = json.loads(cli("review", rid, "--json", "--no-seal").stdout)
    assert again.get("verification") is None
    assert len(json.loads(cli("show", rid, "--json").stdout)["verifications"]) == 1


@SQLITE
def test_a_reproduction_verdict_is_sealed_naming_both_records(store_home, two) -> None:
    """The judge's real verdicts on two sealed records, attested as `reproduce` does."""
    from registry.contracts.sealed import load_sealed
    from registry.formats.rundir import LaunchPlan
    from registry.recipe.schema import MetricFormula
    from registry.reproduce import Reproduction, attest
    from registry.reproduce.environment import EnvironmentCheck
    from registry.reproduce.judge import identity_verdict, performance_verdict
    from registry.store.verifications import verifications_of

    original, new = (load_sealed(store_home, rid) for rid in two)
    performance = performance_verdict(original, new, MetricFormula("99 / (t[99] - t[0])"), 99,
                                      0.95, 1)
    identity = identity_verdict(original, new)
    from registry.reproduce.judge import ContractVerdict

    done = Reproduction(original=two[0], recipe="record", record=two[1],
                        plan=LaunchPlan(platform="cpu", argv=["vllm"], env={}, cwd=".", port=1),
                        environment=EnvironmentCheck(facts=[], drift=[]),
                        identity=identity, performance=performance,
                        contract=ContractVerdict(contract="none", passed=True),
                        passed=identity.passed and performance.passed)
    sealed = attest(store_home, done)
    for rid in two:
        [v] = verifications_of(store_home, rid)
        assert v.id == sealed.verification
    p = v.statement.predicate
    assert p.records == {"original": two[0], "reproduction": two[1]}
    assert {c.name: c.result for c in p.checks}["performance"] == (
        Result.passed if performance.passed else
        Result.not_judged if performance.status == "not judged" else
        Result.failed if performance.status == "failed" else Result.inconclusive)
    figures = next(c for c in p.checks if c.name == "performance").figures
    assert figures and all(f.record == two[1] for f in figures)


def _forge(store_home, tmp_path, rid: str, *, trusted: bool) -> str:
    """A verification envelope committed with plain git (no registry signature on the
    commit), signed by a stranger's key or by the home's own key."""
    from registry.base.canonical import sha256_hex
    from registry.formats.verification import verification_bytes
    from registry.signing import dsse
    from registry.signing.keys import create_key, signing_key

    if trusted:
        keyid, key = signing_key()
    else:
        create_key(tmp_path / "mallory")
        keyid, key = signing_key(tmp_path / "mallory")
    statement = verification({"reviewed": rid}, [Check(name="all", result=Result.passed)],
                             policy=Policy(name="review", uri="x"),
                             verifier=Verifier(id="mallory", key=keyid))
    data = verification_bytes(statement)
    ledger = store_home.ledger
    path = ledger / "verifications" / f"{sha256_hex(data)}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(dsse.envelope_bytes(dsse.sign(data, keyid, key)))
    _git(ledger, "add", "-A")
    _git(ledger, "commit", "-qm", "a verification")
    return sha256_hex(data)


@SQLITE
@pytest.mark.parametrize("trusted", [False, True])
def test_a_verification_forged_with_plain_git_is_refused(cli, store_home, two, tmp_path,
                                                         trusted) -> None:
    forged = _forge(store_home, tmp_path, two[0], trusted=trusted)
    r = cli("verify", "--all", "--json")
    report = json.loads(r.stdout)
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    assert any("is not signed" in p["detail"] for p in report["ledger"])
    shown = json.loads(cli("show", two[0], "--json").stdout)
    if not trusted:  # an untrusted key's attestation is never shown as a verification
        assert shown["verifications"] == []
        assert any(p["part"] == f"verification {forged[:12]}" and "untrusted" in p["detail"]
                   for p in report["attestation_problems"])


@SQLITE
def test_an_edited_verification_is_refused(cli, store_home, two) -> None:
    """The result flipped in a sealed attestation's payload, committed with plain git."""
    import base64

    rid = two[0]
    att = json.loads(cli("review", rid, "--json").stdout)["verification"]
    path = store_home.ledger / "verifications" / f"{att}.json"
    envelope = json.loads(path.read_bytes())
    payload = base64.b64decode(envelope["payload"]).replace(b'"result":"', b'"result":"X')
    envelope["payload"] = base64.b64encode(payload).decode()
    path.write_text(json.dumps(envelope))
    _git(store_home.ledger, "commit", "-qam", "fix")
    report = json.loads(cli("verify", "--all", "--json").stdout)
    assert any("changed by commit" in p["detail"] for p in report["ledger"])
    assert any("invalid" in p["detail"] for p in report["attestation_problems"])
    assert json.loads(cli("show", rid, "--json").stdout)["verifications"] == []


def test_a_verification_travels_with_a_pull(cli, team, tmp_path, make_run,  # noqa: F811
                                            monkeypatch) -> None:
    from tests.test_team import add_remote, seal, verify_all

    alice, bob = team
    url = str(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, None, create=True)
    rid = seal(alice, make_run("one"))
    att = json.loads(cli("review", rid, "--json").stdout)["verification"]
    assert att and cli("push").exit_code == 0
    add_remote(cli, monkeypatch, bob, url, None)
    r = cli("pull")
    assert r.exit_code == 0, r.stderr
    [v] = json.loads(cli("show", rid, "--json").stdout)["verifications"]
    assert v["id"] == att and v["signer"] == alice.keyid
    report = verify_all(cli, bob)
    assert report["code"] == 0 and report["verifications"] == 1, report


@SQLITE
def test_the_report_shows_a_records_verifications(cli, store_home, two, tmp_path) -> None:
    att = json.loads(cli("review", two[0], "--json").stdout)["verification"]
    r = cli("report", *two, "--out", tmp_path / "site")
    assert r.exit_code == 0, r.stderr
    records = tmp_path / "site" / "records"
    [page] = [p.read_text() for p in records.glob(f"{two[0][:12]}*.html")]
    assert "verifications (signed attestations)" in page and att[:12] in page
    [other] = [p.read_text() for p in records.glob(f"{two[1][:12]}*.html")]
    assert "verifications (signed attestations)" not in other
