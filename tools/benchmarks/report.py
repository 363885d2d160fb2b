#!/usr/bin/env python3
"""Report and compare: `registry report` of 1,000 records, the index page of 10,000
records rendered in headless Chromium, `registry compare` of 50 records.

Records are real: the captured tiny-bf16-kv run (tests/data/cpu-runs) is sealed once,
and 999 more statements are made from it (another sealed_at, one of five lanes), each
signed and committed to the ledger; their artifacts are the same objects. Every figure
is a wall time from this run, beside a baseline measured in the same run:

- report of 1,000 records (target <= 10 s), against reading the same 1,000 records
  through `sealed_statement` (the floor any reader pays), the two alternately, median
  of REGISTRY_BENCH_ROUNDS (3) with the spread (REGISTRY_BENCH_REPORT_ONLY=1 stops
  there);
- the index of 10,000 records in Chromium, navigation start to load end (target <= 2 s),
  against a page with one row;
- `registry compare` of 50 ids as a fresh process (target <= 0.5 s), against a bare
  `python -c pass`.

    .venv/bin/python tools/benchmarks/report.py
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))

from ledgers import new_home  # noqa: E402
from timing import alternate  # noqa: E402

from registry.formats.record import record_id, statement_bytes  # noqa: E402
from registry.signing import dsse  # noqa: E402
from registry.signing.keys import signing_key  # noqa: E402
from registry.store.home import Home  # noqa: E402
from registry.store.ledger import Ledger, record_folder  # noqa: E402

RUN = ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv"


def best(fn: Callable[[], object], repeat: int = 3) -> tuple[float, float]:
    """Best (wall, CPU) seconds of `fn`, its child processes' CPU included: the machine
    is shared, so the CPU time says what the work costs when the wall time is inflated."""
    times = []
    for _ in range(repeat):
        cpu = _cpu()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start, _cpu() - cpu))
    return min(times)


def _cpu() -> float:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def home_with(folder: Path, n: int) -> tuple[Home, list[str]]:
    from registry.seal import seal_run
    from registry.store.query import sealed_statement
    from registry.store.reindex import reindex

    os.environ["REGISTRY_HASH_CACHE"] = str(folder / "hashes.sqlite")
    home = new_home(folder)
    first = seal_run(RUN, home=home, recipe_path=ROOT / "recipes" / "tiny-bf16-kv.toml").id
    _, statement = sealed_statement(home, first)
    keyid, private = signing_key()
    ledger = Ledger(home.ledger)
    ids = [first]
    files: dict[str, bytes] = {}
    for i in range(1, n):
        p = statement.predicate
        recipe = {**(p.recipe or {}), "lane": f"lane-{i % 5}"}
        sealed = f"2026-07-{1 + i % 28:02d}T00:{i // 60 % 60:02d}:{i % 60:02d}.{i:06d}+00:00"
        run = p.run.model_copy(update={"sealed_at": sealed})
        data = statement_bytes(statement.model_copy(update={
            "predicate": p.model_copy(update={"recipe": recipe, "run": run})}))
        rid = record_id(data)
        files[f"{record_folder(rid)}/statement.json"] = data
        files[f"{record_folder(rid)}/envelope.json"] = dsse.envelope_bytes(
            dsse.sign(data, keyid, private))
        ids.append(rid)
    ledger.recover()
    ledger.commit(files, f"{n - 1} records", (keyid, private))  # one signed commit
    reindex(home)
    return home, ids


def chromium_load_s(page: Path) -> float:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        times = []
        for _ in range(3):
            driver.get(page.as_uri())
            times.append(driver.execute_script(
                "const t = performance.getEntriesByType('navigation')[0];"
                "return t.loadEventEnd / 1000;"))
            assert driver.execute_script("return document.querySelectorAll("
                                         "'#records tbody tr').length") > 0
        return float(min(times))
    finally:
        driver.quit()


def index_of(site: Path, records: list, name: str) -> Path:
    from registry.report import pages

    path = site / name
    path.write_text(pages.index_page(records, [], []), encoding="utf-8")
    return path


def main() -> None:
    from registry.report import Selection, build_report
    from registry.report.load import load_records
    from registry.store.ledger import committed_ids
    from registry.store.query import find_records, sealed_statement

    with tempfile.TemporaryDirectory(prefix="registry-bench-report-") as tmp:
        folder = Path(tmp)
        home, ids = home_with(folder, int(os.environ.get("REGISTRY_BENCH_RECORDS", "1000")))
        committed = committed_ids(home.ledger)
        if not os.environ.get("REGISTRY_BENCH_PROFILE"):
            timings = alternate({
                "read": lambda: [sealed_statement(home, rid, committed) for rid in ids],
                "report": lambda: build_report(home, folder / "site", Selection())},
                int(os.environ.get("REGISTRY_BENCH_ROUNDS", "3")))
            print(f"report of {len(ids)} records: {timings['report'].text(timings['read'])} "
                  "(target <= 10 s wall)\n"
                  f"  baseline, reading the same records through sealed_statement: "
                  f"{timings['read'].text()}", flush=True)
            if os.environ.get("REGISTRY_BENCH_REPORT_ONLY"):
                return
        else:
            import cProfile

            cProfile.runctx("build_report(home, folder / 'site', Selection())", globals(),
                            locals(), sort="cumulative")
            return

        [one], _ = load_records(home, find_records(home, [f"id={ids[0]}"]))
        many = [one.model_copy(update={"row": one.row.model_copy(update={
            "id": f"{i:064x}", "lane": f"lane-{i % 5}"})}) for i in range(10_000)]
        big = chromium_load_s(index_of(folder / "site", many, "index-10000.html"))
        small = chromium_load_s(index_of(folder / "site", many[:1], "index-1.html"))
        print(f"index of 10,000 records in Chromium: {big:.2f} s to load end "
              f"(target <= 2 s); one record: {small:.2f} s")

        registry = [sys.executable, "-m", "registry", "compare", *ids[:50], "--format", "csv"]
        compare = best(lambda: subprocess.run(registry, check=True, capture_output=True))
        bare = best(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
        print(f"compare of 50 records: {compare[0]:.3f} s wall, {compare[1]:.3f} s CPU "
              f"(target <= 0.5 s); bare python start: {bare[0]:.3f} s wall, {bare[1]:.3f} s CPU")


if __name__ == "__main__":
    main()
