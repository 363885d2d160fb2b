"""`registry report`: the static site, built from real sealed records (the captured
CPU runs and the Laguna B70 capsule) and looked at in headless Chromium."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from registry.errors import ExitCode
from tests import browser, sealed_home
from tests.conftest import FIXTURES, ROOT

env = sealed_home.env  # the module fixture: a home of real sealed records

RUNS = ROOT / "tests" / "data" / "cpu-runs"


@pytest.fixture(scope="module")
def site(env) -> Path:
    from registry.report import Selection, build_report

    out = env["base"] / "site"
    summary = build_report(env["home"], out, Selection())
    assert summary.records == 6 and not summary.skipped
    return out


def test_a_diff_page_states_the_signed_figures(env) -> None:
    """A report's diff compares the figures each record signed (what its own page shows),
    not figures derived again by this registry: here a signed figure that differs from
    what the rows give now is the one compared."""
    from registry.compare.diff import diff
    from registry.compare.sides import side_as_signed
    from registry.contracts.sealed import load_sealed
    from registry.store.query import sealed_statement

    (a, sa), (b, sb) = (sealed_statement(env["home"], rid) for rid in env["bf16"][:2])
    [suite] = sb.predicate.results
    metric = suite.metrics["ttft_ms.p50"]  # these rows arrived in bursts: no decode figure
    signed = suite.model_copy(update={"metrics": {**suite.metrics, metric.name: metric.model_copy(
        update={"value": 2 * metric.value})}})
    sb = sb.model_copy(update={"predicate": sb.predicate.model_copy(update={"results": [signed]})})
    d = diff(side_as_signed(a, sa, load_sealed(env["home"], a).bench),
             side_as_signed(b, sb, load_sealed(env["home"], b).bench))
    [figure] = [m for m in d.metrics if m.name == metric.name]
    assert figure.b == 2 * metric.value
    assert figure.a == sa.predicate.results[0].metrics[metric.name].value


def test_pages_split_over_processes_are_the_pages_written_inline(env, tmp_path,
                                                                 monkeypatch) -> None:
    """The report writes its record and diff pages in forked workers when there are many
    (registry.base.parallel): the site is the same, byte for byte, as written inline."""
    from registry.base import parallel
    from registry.report import Selection, build_report

    def site_files(out: Path) -> dict[str, bytes]:
        return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
                if p.is_file()}

    monkeypatch.setattr(parallel, "MIN_ITEMS", 10**9)
    build_report(env["home"], tmp_path / "inline", Selection())
    monkeypatch.setattr(parallel, "MIN_ITEMS", 2)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    build_report(env["home"], tmp_path / "split", Selection())
    inline, split = site_files(tmp_path / "inline"), site_files(tmp_path / "split")
    assert len(inline) > 10 and inline == split


def bench_rates(lane: str, window: int = 100) -> list[float]:
    """Decode rates computed here from the raw bench file: 99 / (t[99] - t[0])."""
    rows = json.loads((RUNS / lane / "bench.json").read_text())["rows"]
    out = []
    for r in rows:
        t = r["token_times_s"]
        if not r.get("error") and len(t) >= window and t[window - 1] > t[0]:
            out.append((window - 1) / (t[window - 1] - t[0]))
    return out


def streamed_prompts(lane: str) -> int:
    rows = json.loads((RUNS / lane / "bench.json").read_text())["rows"]
    return len({(r["suite"], r["prompt_id"]) for r in rows if r["token_times_s"]})


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag in ("script", "link", "img") and (a.get("src") or a.get("href")):
            self.sources.append(a.get("src") or a.get("href") or "")


def parsed(path: Path) -> Links:
    p = Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


# ---- the site on disk ----

def test_every_link_and_asset_resolves_inside_the_site(site) -> None:
    pages = sorted(site.rglob("*.html"))
    assert {p.parent.name for p in pages} == {"site", "records", "diffs", "lanes", "logs"}
    checked = 0
    for page in pages:
        links = parsed(page)
        for ref in [*links.hrefs, *links.sources]:
            url = urlsplit(ref)
            assert not url.scheme and not url.netloc, f"{page.name}: external {ref}"
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            assert target.is_file(), f"{page.relative_to(site)} -> {ref}"
            assert site.resolve() in target.parents
            if url.fragment:
                assert url.fragment in parsed(target).ids, f"{page.name} -> {ref}"
            checked += 1
    assert checked > 100


def test_evidence_links_point_at_the_matched_log_line(site, env) -> None:
    from registry.store.shown import show_record

    rid = env["bf16"][0]
    statement = show_record(env["home"], rid).statement
    field = statement.predicate.identity.fields["precision.kv_cache"]
    [evidence] = [e for e in field.evidence if e.source == "server.log"][:1]
    page = site / "records" / f"{rid}.html"
    href = next(h for h in parsed(page).hrefs if h.endswith(f"#L{evidence.line}"))
    log = (page.parent / href.split("#")[0]).read_text()
    line = re.search(rf'<span id="L{evidence.line}" data-n="{evidence.line}">(.*?)</span>', log)
    raw = (RUNS / "tiny-bf16-kv" / "server.log").read_text().splitlines()[evidence.line - 1]
    assert line and "kv_cache_dtype" in raw
    from html import unescape

    assert unescape(line.group(1)) == raw


def test_refuses_a_folder_that_is_not_a_report(cli, env, tmp_path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    r = cli("report", "--out", target, "--home", env["home"].root)
    assert r.exit_code == ExitCode.REFUSED
    assert "not an earlier report" in r.stderr and "Traceback" not in r.stderr
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mine")]


def test_chosen_records_and_a_rewrite_of_an_earlier_report(cli, env, tmp_path) -> None:
    out = tmp_path / "r"
    r = cli("report", env["others"][0][:8], "--out", out, "--home", env["home"].root, "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["records"] == 1
    r = cli("report", "--lane", "tiny-bf16-exact", "--out", out, "--home", env["home"].root,
            "--json")
    assert r.exit_code == 0, r.stderr
    done = json.loads(r.stdout)
    assert done["records"] == 3 and done["pages"]["diffs"] == 2 and done["pages"]["lanes"] == 1
    assert sorted(p.stem for p in (out / "records").iterdir()) == sorted(env["bf16"])
    r = cli("report", "--where", "precision.kv_cache=fp8_e4m3", "--out", out,
            "--home", env["home"].root, "--json")
    assert json.loads(r.stdout)["records"] == 1
    r = cli("report", "--where", "parallel.tensor>1", "--out", out, "--home", env["home"].root,
            "--json")
    assert json.loads(r.stdout)["records"] == 1  # the Laguna record, tp 4
    r = cli("report", "ffff", "--out", out, "--home", env["home"].root)
    assert r.exit_code == ExitCode.NOT_FOUND
    assert (out / "index.html").is_file()  # the earlier report is still whole


def test_a_changed_record_is_listed_not_shown(cli, env, tmp_path) -> None:
    from registry.store.ledger import STATEMENT, folder_at

    rid = env["others"][1]
    statement = folder_at(env["home"].ledger, rid) / STATEMENT
    original = statement.read_bytes()
    try:
        statement.write_bytes(original.replace(b'"complete"', b'"completed"', 1))
        r = cli("report", "--out", tmp_path / "r", "--home", env["home"].root, "--json")
    finally:
        statement.write_bytes(original)
    assert r.exit_code == 0, r.stderr
    done = json.loads(r.stdout)
    assert [s["id"] for s in done["skipped"]] == [rid] and done["records"] == 5
    assert "no longer hashes to its id" in done["skipped"][0]["reason"]
    assert not (tmp_path / "r" / "records" / f"{rid}.html").exists()


def test_a_chart_spec_cannot_close_its_script_element() -> None:
    from registry.report.html import chart

    html = chart("x", {"title": "</script><script>alert(1)</script>"})
    assert html.count("</script>") == 1 and "\\u003c/script>" in html


# ---- in the browser ----

@pytest.fixture(scope="module")
def driver():
    yield from browser.chromium()


def test_index_sorts_filters_and_links(site, env, driver) -> None:
    logs = browser.open_page(driver, site / "index.html")
    assert not browser.errors(logs)
    assert browser.count(driver, "#records tbody tr") == 6
    # the headline chart: a point per record with a signed figure (laguna's, fp8's)
    assert browser.count(driver, "#chart-headlines g.mark-symbol.role-mark path") == 2
    box = driver.find_element("css selector", "input[data-filters]")
    box.send_keys("fp8_e4m3")
    shown = driver.execute_script(
        "return Array.from(document.querySelectorAll('#records tbody tr'))"
        ".filter(r => !r.hidden).map(r => r.cells[0].textContent)")
    assert shown == [env["others"][0][:12]]
    assert driver.find_element("id", "shown").text == "1"
    box.clear()
    box.send_keys(" ")  # an empty filter shows all again
    header = driver.find_element("xpath", "//th[text()='tok/s']")
    header.click()
    rates = driver.execute_script(
        "return Array.from(document.querySelectorAll('#records tbody tr'))"
        ".map(r => r.cells[7].dataset.sort).filter(x => x !== '').map(Number)")
    from registry.store.query import find_records

    signed = [r.decode_tok_s for r in find_records(env["home"]) if r.decode_tok_s is not None]
    assert rates == sorted(signed) and len(rates) == 2  # laguna's and fp8's; no re-derivation
    flagged = driver.execute_script(
        "return Array.from(document.querySelectorAll('#records tbody tr'))"
        ".map(r => [r.cells[7].textContent, r.cells[8].textContent])")
    assert flagged.count(["- (degraded)", "degraded"]) == 4  # no figure left: said so
    header.click()
    again = driver.execute_script(
        "return Array.from(document.querySelectorAll('#records tbody tr'))"
        ".map(r => r.cells[7].dataset.sort).filter(x => x !== '').map(Number)")
    assert again == sorted(rates, reverse=True)
    browser.screenshot(driver, "report-index")
    driver.find_element("link text", env["laguna"][:12]).click()
    assert driver.title == f"record {env['laguna'][:12]}"


def test_record_page_draws_one_mark_per_prompt_and_per_rate(site, env, driver) -> None:
    rid = env["bf16"][0]
    logs = browser.open_page(driver, site / "records" / f"{rid}.html")
    assert not browser.errors(logs), logs
    assert browser.count(driver, "#chart-timeline g.mark-line path") == \
        streamed_prompts("tiny-bf16-kv")
    assert browser.count(driver, "#chart-rates g.mark-rect path") == \
        len(bench_rates("tiny-bf16-kv")) > 0
    verdict = driver.find_element("css selector", "section .status").text
    assert verdict == "passed"  # re-derived against the lane's teacher (itself)
    browser.screenshot(driver, "report-record")
    driver.find_element("css selector", "a.evidence").click()
    target = driver.execute_script("return document.querySelector(':target').textContent")
    assert target  # the evidence link landed on a line of the log page


def test_laguna_record_page(site, env, driver) -> None:
    logs = browser.open_page(driver, site / "records" / f"{env['laguna']}.html")
    assert not browser.errors(logs), logs
    rows = json.loads((FIXTURES / "laguna-b70-record/evidence/record-run/bench.json")
                      .read_text())
    assert browser.count(driver, "#chart-timeline g.mark-line path") >= 1
    assert browser.count(driver, "#chart-rates g.mark-rect path") == 13  # the 13 rows
    assert rows  # the capsule's rows are what the page drew from


def test_diff_page_puts_changed_axes_first(site, env, driver) -> None:
    a, b = env["bf16"][0], env["bf16"][1]
    page = site / "diffs" / f"{a[:12]}-{b[:12]}.html"
    logs = browser.open_page(driver, page)
    assert not browser.errors(logs), logs
    n = len(bench_rates("tiny-bf16-kv"))
    assert browser.count(driver, "#chart-ab g.mark-rect path") == 2 * n
    contracts = driver.execute_script(
        "return Array.from(document.querySelectorAll('section')[1].querySelectorAll('tbody tr'))"
        ".map(r => [r.cells[0].textContent, r.cells[1].textContent])")
    assert ["bitwise-teacher", "comparable"] in contracts
    browser.screenshot(driver, "report-diff")
    # a diff across precisions refuses the bitwise contract and says why
    from registry.compare.diff import diff
    from registry.compare.sides import side_from_record

    d = diff(side_from_record(env["home"], a), side_from_record(env["home"], env["others"][0]))
    assert next(c for c in d.contracts if c.contract == "bitwise-teacher").comparable is False


def test_lane_history_lists_every_record_and_draws_only_signed_figures(site, env,
                                                                        driver) -> None:
    """The BF16 lane's three captured records have no decode figure left (every row
    arrived in a burst): the lane draws none of them (the report once drew a naive
    median of all rows), lists each as degraded, and names the teacher change."""
    logs = browser.open_page(driver, site / "lanes" / "tiny-bf16-exact.html")
    assert not browser.errors(logs), logs
    assert "no signed decode figure in this lane" in driver.page_source
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll('tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent))")
    assert [c[3:5] for c in cells[:3]] == [["- (degraded)", "degraded"]] * 3
    hrefs = driver.execute_script(
        "return Array.from(document.querySelectorAll('tbody a')).map(a => a.href)")
    assert len(hrefs) == 3 + 2  # three records, two diffs with the previous one
    logs = browser.open_page(driver, site / "lanes" / "tiny-fp8-kv.html")
    assert not browser.errors(logs), logs
    assert browser.count(driver, "#chart-history g.mark-symbol.role-mark path") == 1
    browser.screenshot(driver, "report-lane")


def test_history_spec_marks_quality_and_the_teacher_change() -> None:
    from registry.report import charts

    points = [{"id": "a", "sealed": "2026-12-01T10:00:00", "rate": 500.0, "quality": "valid",
               "low": 490.0, "high": 510.0, "href": "a.html"},
              {"id": "b", "sealed": "2026-12-01T11:00:00", "rate": 600.0,
               "quality": "degraded", "low": None, "high": None, "href": "b.html"}]
    spec = charts.history(points, [{"at": "2026-12-01T10:30:00", "teacher": "t", "commit": "c"}])
    interval, _line, marks, teacher = spec["layer"]
    assert [p["id"] for p in interval["data"]["values"]] == ["a"]  # only a real interval
    assert marks["encoding"]["color"]["field"] == "quality" == marks["encoding"]["shape"]["field"]
    assert teacher["mark"]["strokeDash"]


def test_every_page_carries_a_strict_content_security_policy(site) -> None:
    """No inline script runs, nothing is fetched, no eval (the browser tests above draw
    every chart under this policy)."""
    from registry.report.html import CSP

    assert "'unsafe-eval'" not in CSP and "'unsafe-inline'" not in CSP
    assert "default-src 'none'" in CSP and "connect-src 'none'" in CSP
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in text, page
        inline = re.findall(r"<script(?![^>]*\bsrc=)([^>]*)>", text)
        assert all('type="application/json"' in attrs for attrs in inline), page


def test_the_lane_page_names_each_teacher_change_as_signed(site, env) -> None:
    """A binding is a DSSE envelope: read through the store's signed reader, the change
    names its record (reading the envelope as the binding labelled it "unreadable")."""
    from registry.store.teachers import binding_history

    teacher = f"record {env['bf16'][0][:12]}"
    [change] = binding_history(env["home"], "tiny-bf16-exact")
    assert (change.teacher, change.problem) == (teacher, None)
    page = (site / "lanes" / "tiny-bf16-exact.html").read_text(encoding="utf-8")
    changes = page.split("teacher changes", 1)[1]
    assert teacher in changes and change.commit[:12] in changes
    assert "unreadable" not in page and "not shown" not in page


def test_a_binding_no_trusted_key_signed_is_not_shown(env) -> None:
    from registry.store.teachers import _change
    from registry.store.trust import current_keyring

    keyring = current_keyring(env["home"]).current
    plain = json.dumps({"lane": "x", "source": {"kind": "record", "ref": "ab" * 32},
                        "axes": {}, "rows": []}).encode()  # the binding, but unsigned
    change = _change("c" * 40, "2026-12-01T00:00:00Z", plain, keyring)
    assert change.teacher is None and change.problem and "invalid" in change.problem


def test_index_at_800px_compares_chosen_records_side_by_side(site, env, driver) -> None:
    """At 800 px every figure, quality and verdict is on screen (the seal time and model
    give way, a line says so); ticked records are laid out side by side from the page's
    own data, with the figure and quality every other view states; blanks sort last in
    both directions; a contract that cannot apply reads `not applicable`, not `refused`."""
    driver.set_window_size(800, 1000)
    logs = browser.open_page(driver, site / "index.html")
    assert not browser.errors(logs), logs
    width = driver.execute_script("return document.documentElement.clientWidth")
    right = driver.execute_script(
        "return Math.max(...Array.from(document.querySelectorAll('#records th'))"
        ".filter(h => h.offsetParent).map(h => h.getBoundingClientRect().right))")
    assert right <= width, (right, width)
    assert driver.find_element("css selector", ".narrow-note").is_displayed()
    words = driver.execute_script(
        "return Array.from(document.querySelectorAll('#records tbody tr'))"
        ".map(r => r.cells[9].textContent)")
    assert "refused" not in words and "not applicable" in words
    header = driver.find_element("xpath", "//th[text()='tok/s']")
    for _ in range(2):  # ascending, then descending: the records without a figure last
        header.click()
        keys = driver.execute_script(
            "return Array.from(document.querySelectorAll('#records tbody tr'))"
            ".map(r => r.cells[7].dataset.sort)")
        blank = [k in ("", "-") for k in keys]
        assert blank == sorted(blank), keys
    boxes = driver.find_elements("css selector", "input.pick")
    picked = [env["laguna"], env["others"][0]]
    for box in boxes:
        if box.get_attribute("value") in picked:
            box.click()
    driver.find_element("id", "compare-picked").click()
    table = driver.find_element("id", "side-by-side")
    heads = [th.text for th in table.find_elements("css selector", "thead th")][1:]
    assert sorted(heads) == sorted(x[:12] for x in picked)
    rows = {r[0]: r[1:] for r in driver.execute_script(
        "return Array.from(document.querySelectorAll('#side-by-side tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent))")}
    from registry.store.query import find_records

    listed = {r.id: r for r in find_records(env["home"])}
    for n, short in enumerate(heads):
        rid = next(x for x in picked if x.startswith(short))
        row = listed[rid]
        assert rows["precision.kv_cache"][n] == (row.kv_cache or "?")
        assert rows["quality"][n] == row.quality
    assert any(k.startswith("published: ") for k in rows)  # the lab's figures, imported
    browser.screenshot(driver, "report-index-side-by-side")
