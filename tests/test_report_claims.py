"""The report's claims page: the lab's 17 claims imported, the page rendered in Chromium;
every claim on it with the status, figures and levels `registry claim list --json`
gives (one source: registry/claims/view.py), and the page fits an 800 px window."""

from __future__ import annotations

import json

import pytest

from tests import browser
from tests.test_claim_import import LAB


@pytest.fixture
def driver():
    yield from browser.chromium()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_claims_page_states_the_lab_and_the_registry_side_by_side(cli, store_home, tmp_path,
                                                                      driver) -> None:
    assert cli("claim", "import", LAB, "--no-records").exit_code == 0
    claims = json.loads(cli("claim", "list", "--json").stdout)
    out = tmp_path / "site"
    r = cli("report", "--out", out)
    assert r.exit_code == 0, r.stderr
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="claims.html"' in index and f"{len(claims)} claims" in index
    driver.set_window_size(800, 1000)
    logs = browser.open_page(driver, out / "claims.html")
    assert not browser.errors(logs), logs
    rows = driver.execute_script(
        "return Array.from(document.querySelectorAll('table.sortable tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.innerText))")
    assert len(rows) == len(claims) == 17
    for row, claim in zip(rows, claims, strict=True):
        assert row[0].splitlines()[0].replace("\n", "") in claim["id"]
        assert row[1].splitlines()[0] == claim["status"]
        level, lab = claim["evidence_level"]["level"], claim.get("lab_level") or "states none"
        assert f"registry: {level}" in row[4] and f"lab: {lab}" in row[4], (row, claim["id"])
        verified = claim["verification"].get("value")
        assert row[3].splitlines()[0] == ("-" if verified is None else f"{verified:.6g}")
    width = driver.execute_script("return document.documentElement.clientWidth")
    right = driver.execute_script(
        "return Math.max(...Array.from(document.querySelectorAll('table.sortable th'))"
        ".map(h => h.getBoundingClientRect().right))")
    assert right <= width, (right, width)
    assert browser.count(driver, "main section[id] table") == 17  # every claim's history
    browser.screenshot(driver, "report-claims")
