"""Contributor credit as signed facts of the ledger: a stated status is recorded only
when the evidence reaches it (a validated boost needs an A/B attestation this ledger
holds, decided faster), refused otherwise with the reason and nothing written; facts are
re-derived when read; a package carries a contributor's standing fact."""

from __future__ import annotations

import json

import pytest

from registry.publish.closure import check_package
from tests.test_publish import record  # noqa: F401  (the fixture: a sealed CPU run)


@pytest.fixture
def ab(store_home, record):  # noqa: F811
    """A signed A/B verification of this ledger whose boost was decided faster."""
    from registry.formats.verification import Check, Figure, Policy, Result, Verifier, verification
    from registry.signing.keys import signing_key
    from registry.store.verifications import seal_verification

    keyid, key = signing_key()
    boost = Check(name="boost/tiny-cold", result=Result.passed, detail="faster", figures=[
        Figure(metric="tiny-cold/boost_pct", value=6.1, low=2.0, high=9.9, unit="%")])
    return seal_verification(store_home, verification(
        {"side-b": record}, [boost], policy=Policy(name="ab", uri="docs/measurement.md"),
        verifier=Verifier.registry("ab", keyid)), (keyid, key)).id


def toml(tmp_path, body: str):
    path = tmp_path / "credit.toml"
    path.write_text(body)
    return path


INTAKE = 'intake = { right_to_submit = true, license = "Apache-2.0", patch_sha256 = "' \
         + "c" * 64 + '" }\nprovenance = { lab = "routing", contributor_delta = "kernel" }\n'


def listed(cli) -> list[dict]:
    result = cli("credit", "list", "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_statuses_are_signed_facts_when_the_evidence_reaches_them(cli, tmp_path, store_home,
                                                                   ab):
    result = cli("credit", "add", toml(tmp_path, f"""
[[contributor]]
id = "dominick253"
kind = "external"
profile = "https://github.com/dominick253"
contribution = "W8A16 block kernel"
status = "validated-boost"
evidence = ["{ab[:12]}"]
{INTAKE}
[[contributor]]
id = "someone"
kind = "external"
status = "credited"
intake = {{ right_to_submit = true, license = "MIT" }}
"""), "--json")
    assert result.exit_code == 0, result.stderr
    facts = {c["fact"]["contributor"]: c for c in listed(cli)}
    boost = facts["dominick253"]
    assert boost["stands"] and boost["derived"] == "validated-boost"
    assert boost["fact"]["evidence"] == [ab]  # the prefix stored as the full id
    assert "+6.10%" in boost["fact"]["validated_effect"]
    assert boost["fact"]["provenance"]["contributor_delta"] == "kernel"
    assert facts["someone"]["derived"] == "credited"
    files = [p for p in (store_home.ledger).rglob("*.json") if "credits" in p.parts]
    assert {p.parent.name for p in files} == {"dominick253", "someone"}
    assert cli("verify", "--all").exit_code == 0  # the ledger's history accepts them


@pytest.mark.parametrize(("evidence", "why"), [
    ('["' + "9" * 12 + '"]', "no verification of this ledger"),
    ("[]", "no A/B verification named as evidence"),
])
def test_a_boost_without_an_ab_of_this_ledger_is_refused_and_nothing_written(
        cli, tmp_path, store_home, ab, evidence, why):
    result = cli("credit", "add", toml(tmp_path, f"""
[[contributor]]
id = "good"
kind = "lab"
status = "acknowledged"

[[contributor]]
id = "claims-a-boost"
kind = "external"
status = "validated-boost"
evidence = {evidence}
{INTAKE}"""))
    assert result.exit_code == 6
    assert "stated validated-boost, the evidence reaches credited" in result.stderr
    assert why in result.stderr
    assert listed(cli) == []  # all or nothing: the good entry was not written either


def test_integrated_needs_the_patch_in_the_record_it_names(cli, tmp_path, store_home, ab,
                                                         record):  # noqa: F811
    result = cli("credit", "add", toml(tmp_path, f"""
[[contributor]]
id = "dominick253"
kind = "external"
status = "integrated"
evidence = ["{ab}"]
included_in = "{record[:12]}"
{INTAKE}"""))
    assert result.exit_code == 6
    assert "its patch is not among the included patches" in result.stderr
    unknown = cli("credit", "add", toml(tmp_path, f"""
[[contributor]]
id = "dominick253"
kind = "external"
status = "integrated"
evidence = ["{ab}"]
included_in = "{'f' * 12}"
{INTAKE}"""))
    assert unknown.exit_code == 5 and listed(cli) == []


def test_a_package_carries_the_standing_signed_fact(cli, tmp_path, store_home, ab, record):  # noqa: F811
    assert cli("credit", "add", toml(tmp_path, f"""
[[contributor]]
id = "dominick253"
kind = "external"
status = "validated-boost"
evidence = ["{ab}"]
{INTAKE}""")).exit_code == 0
    fact = listed(cli)[0]
    out = tmp_path / "pkg"
    result = cli("publish", record[:12], "--out", out, "--credit", "dominick253", "--json")
    assert result.exit_code == 0, result.stderr
    (carried,) = json.loads((out / "package.json").read_text())["contributors"]
    assert carried["status"] == "validated-boost" and carried["credit_fact"] == fact["id"]
    assert carried["intake"]["patch_sha256"] == "c" * 64
    assert "signature_invalid" not in {f.code for f in check_package(out).findings}
    missing = cli("publish", record[:12], "--out", tmp_path / "p2", "--credit", "nobody")
    assert missing.exit_code == 5 and "no standing credit" in missing.stderr
