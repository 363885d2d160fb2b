"""Every view states a record's headline figure and quality as its signed statement does:
every captured run in tests/data/ (CPU runs, GPU runs, degraded ones too) sealed, every
lab capsule imported, then `list`, `show`, `compare`, `review` and the report's index,
record and lane pages read back and compared with the figure taken here from the
statement's own JSON (the first suite's `decode_tok_s.median`, the worst suite quality).

Also, every view at 80 and 200 columns: no identity value (lane, dtypes, suite, engine
version) cut or broken over lines, one spelling for each (`fp8_e4m3`, `?` unresolved,
12-digit ids, plain numbers), UNPROVEN and `(degraded)` wherever the record is shown."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

DATA = ROOT / "tests" / "data"
RECIPES = ROOT / "recipes"


def complete_runs() -> list[Path]:
    runs = [*sorted((DATA / "cpu-runs").glob("*/")),
            *sorted(DATA.glob("gpu-runs/*/runs/*/"))]
    return [r for r in runs if (r / "status.json").is_file() and json.loads(
        (r / "status.json").read_text()).get("state") == "complete"]


def capsules() -> list[Path]:
    return [*sorted(p for p in (DATA / "lab").iterdir() if p.is_dir()),
            FIXTURES / "laguna-b70-record"]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """Every captured run sealed (a CPU run with its recipe), every capsule imported."""
    from registry.errors import RegistryError
    from registry.importer.capsule import import_capsule
    from registry.seal import seal_run
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    base = tmp_path_factory.mktemp("views")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REGISTRY_KEYS_DIR", str(base / "keys"))
        mp.setenv("REGISTRY_HASH_CACHE", str(base / "hashes.sqlite"))
        mp.delenv("REGISTRY_DATABASE_URL", raising=False)
        create_key(base / "keys")
        created = init_home(base / ".registry")
        genesis(created, signing_key(base / "keys"))
        mp.setenv("REGISTRY_HOME", str(created.root))
        for n, run in enumerate(complete_runs()):
            copy = shutil.copytree(run, base / "runs" / f"{n:03d}-{run.name}")
            recipe = RECIPES / f"{run.name}.toml"
            seal_run(copy, home=created, recipe_path=recipe if run.parent.name == "cpu-runs"
                     and recipe.is_file() else None)
        for capsule in capsules():
            try:
                import_capsule(capsule, home=created)
            except RegistryError as e:  # a capsule with no run evidence is not a record
                assert "no run evidence" in e.message, e.message
        yield created, base


def signed_headline(statement: dict) -> tuple[float | None, str | None]:
    """The headline as the statement's JSON has it, read without the registry's helper:
    an imported record with no rows is `not judged` (docs/import.md), a sealed one with
    no results has no quality."""
    results = statement["predicate"]["results"]
    value = next((s["metrics"]["decode_tok_s.median"]["value"] for s in results
                  if "decode_tok_s.median" in s["metrics"]), None)
    states = {(s.get("quality") or {}).get("state", "not judged") for s in results}
    imported = statement["predicate"].get("imported") is not None
    quality = ("not judged" if imported else None) if not results else next(
        (q for q in ("degraded", "not judged") if q in states), "valid")
    return value, quality


def text(value: float | None, quality: str | None) -> str:
    if value is None:
        return f"- ({quality})" if quality else ""
    return f"{value:.2f}" + (f" ({quality})" if quality not in (None, "valid") else "")


@pytest.fixture(scope="module")
def truth(home) -> dict[str, tuple[float | None, str | None]]:
    from registry.store.ledger import committed_ids, folder_at

    created, _ = home
    out = {}
    for rid in committed_ids(created.ledger):
        statement = json.loads((folder_at(created.ledger, rid) / "statement.json").read_text())
        out[rid] = signed_headline(statement)
    assert len(out) >= len(complete_runs())
    assert {q for _, q in out.values()} >= {"valid", "degraded"}
    return out


def test_list_show_compare_and_review_state_the_signed_figure(cli, home, truth) -> None:
    created, _ = home
    listed = json.loads(cli("list", "--json", "--limit", "0", "--home", created.root).stdout)
    assert {r["id"]: (r.get("decode_tok_s"), r.get("quality")) for r in listed} == truth
    compared = json.loads(cli("compare", "--json", "--home", created.root).stdout)
    assert {r["id"]: (r.get("decode_tok_s.median"), r.get("quality")) for r in compared} == truth
    for rid, (value, quality) in truth.items():
        shown = cli("show", rid[:12], "--home", created.root).stdout
        decode = [line for line in shown.splitlines() if line.startswith("decode ")]
        if not text(value, quality):  # no results at all
            assert not decode, rid
        else:
            stated = re.sub(r" \[[^\]]*\]", "", decode[0].split(None, 1)[1])  # the interval
            assert stated.startswith(text(value, quality)), (rid, decode)
        if quality is None:  # no results at all: nothing to judge
            assert not re.search(r"^quality ", shown, re.M), rid
        else:
            assert re.search(rf"^quality\s+{quality}\b", shown, re.M), rid
    for rid, (value, quality) in list(truth.items())[::4]:  # review re-derives: a sample
        review = json.loads(cli("review", rid[:12], "--json", "--home", created.root).stdout)
        found = [f for f in review["findings"] if f["part"] == "quality"]
        if quality is None:
            assert not found
            continue
        [finding] = found
        assert (finding["status"] == "needs evidence") == (quality == "degraded"), finding
        wanted = "no headline figure" if value is None else f"headline {value:.2f}"
        assert wanted in finding["detail"] and quality in finding["detail"], finding
        if quality == "degraded":
            assert review["verdict"] != "accept"


def test_the_reports_pages_state_the_signed_figure(home, truth) -> None:
    from registry.report import Selection, build_report

    created, base = home
    site = base / "site"
    summary = build_report(created, site, Selection())
    assert summary.records == len(truth) and not summary.skipped
    index = (site / "index.html").read_text(encoding="utf-8")
    for row in re.findall(r"<tr>(.*?)</tr>", index, re.S)[1:]:
        cells = [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                         row, re.S)]
        [rid] = [r for r in truth if r.startswith(cells[0])]
        value, quality = truth[rid]
        assert cells[7] == text(value, quality), (rid, cells)
        assert cells[8].removesuffix(" UNPROVEN").strip() == (quality or ""), (rid, cells)
    for rid, (value, quality) in truth.items():
        page = unescape(re.sub(r"<[^>]+>", " ", (site / "records" / f"{rid}.html").read_text(
            encoding="utf-8")))
        if text(value, quality):
            assert f"decode {text(value, quality)}" in re.sub(r"\s+", " ", page), rid
    for lane in site.glob("lanes/*.html"):
        html = lane.read_text(encoding="utf-8")
        for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)[1:]:
            cells = [unescape(re.sub(r"<[^>]+>", "", c))
                     for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            matches = [r for r in truth if r.startswith(cells[0])]
            if len(matches) != 1:
                continue  # the teacher-change table
            value, quality = truth[matches[0]]
            assert cells[3:5] == [text(value, quality), quality or ""], (lane.name, cells)


def test_list_at_80_columns_shows_every_identity_value_whole(cli, home, monkeypatch) -> None:
    created, _ = home
    monkeypatch.setenv("COLUMNS", "80")
    listed = json.loads(cli("list", "--json", "--limit", "0", "--home", created.root).stdout)
    out = cli("list", "--limit", "0", "--home", created.root).stdout
    lines = out.splitlines()
    assert all(len(line) <= 80 for line in lines) and "…" not in out
    header = lines[0]
    names = [h for h in ("lane", "weights", "kv cache", "tok/s") if h in header]
    starts = [header.index(h) for h in names]
    rows = [dict(zip(names, [line[a:b].strip() for a, b in pairwise(starts)], strict=False))
            for line in lines[1:len(listed) + 1]]
    assert not any(line.startswith(" ") for line in lines[1:len(listed) + 1])  # no wrapping
    for row, record in zip(rows, listed, strict=True):
        assert row["lane"] == record.get("lane", "-")  # whole, on the record's one line
        assert row["kv cache"].rstrip("!") == record.get("kv_cache") or "?"
        if "weights" in row:
            assert row["weights"] == record.get("weights") or "?"


def identity_values(shown: dict) -> set[str]:
    """What a view must never cut: the lane, the precisions, the engine version, suites."""
    p = shown["statement"]["predicate"]
    fields = p["identity"]["fields"]
    names = ("precision.weights", "precision.kv_cache", "engine.version", "model.architecture")
    values = {str(fields[n]["resolved"]) for n in names
              if n in fields and fields[n].get("resolved") is not None}
    values |= {s["suite"] for s in p["results"]}
    lane = (p.get("recipe") or {}).get("lane")
    return values | ({lane} if lane else set())


def kinds_of(listed: list[dict]) -> dict[str, str]:
    """One record of each kind the home holds: imported, degraded, unproven, valid."""
    return {
        "imported": next(r["id"] for r in listed if r["imported"] and r.get("lane") is None
                         and not r["summary"].startswith("UNPROVEN")),
        "unproven": next(r["id"] for r in listed if r["summary"].startswith("UNPROVEN")),
        "degraded": next(r["id"] for r in listed if r.get("quality") == "degraded"
                         and r.get("decode_tok_s") is not None),
        "valid": next(r["id"] for r in listed if r.get("quality") == "valid"
                      and not r["imported"]),
        "laguna": next(r["id"] for r in listed if "LagunaForCausalLM" in r["summary"]),
    }


@pytest.mark.parametrize("width", [80, 200])
def test_every_view_keeps_identity_values_whole_and_spelled_one_way(cli, home, truth,
                                                                    monkeypatch, width) -> None:
    created, _ = home
    monkeypatch.setenv("COLUMNS", str(width))
    at = ("--home", str(created.root))
    kinds = kinds_of(json.loads(cli("list", "--json", "--limit", "0", *at).stdout))
    outputs = {"list": cli("list", "--limit", "0", *at).stdout,
               "compare": cli("compare", *at).stdout,
               "diff": cli("diff", kinds["degraded"][:12], kinds["valid"][:12], *at).stdout}
    for kind, rid in kinds.items():
        outputs[f"show {kind}"] = cli("show", rid[:12], *at).stdout
        outputs[f"review {kind}"] = cli("review", rid[:12], "--no-seal", *at).stdout
        shown = json.loads(cli("show", rid[:12], "--json", *at).stdout)
        lines = outputs[f"show {kind}"].splitlines()
        for value in identity_values(shown):  # each whole on one line of `show`
            assert any(value in line for line in lines), (kind, width, value)
    for name, out in outputs.items():
        assert out and "…" not in out, name
        assert "fp8-e4m3" not in out and "(unresolved)" not in out, name
        assert not re.search(r"\d,\d{3}\b", out), (name, "one way of writing numbers")
    # the lane and KV dtype of every listed record whole on its row, the quality beside
    for rid, (_, quality) in truth.items():
        rows = [x for x in outputs["list"].splitlines() if x.startswith(rid[:12])]
        assert len(rows) == 1 and (quality is None or rows[0].rstrip().endswith(quality)), rid
    # UNPROVEN in every view of an unproven record; (degraded) beside every degraded figure
    bad = kinds["unproven"][:12]
    assert f"{bad}!" in outputs["list"] and f"{bad}!" in outputs["compare"]
    assert "UNPROVEN" in outputs["show unproven"] and "UNPROVEN" in outputs["compare"]
    figures = [x for x in outputs["diff"].splitlines() if x.startswith("decode_tok_s.median")]
    assert figures and "(degraded)" in figures[0], outputs["diff"]
    # imported records without rows: `not judged` (docs/import.md), never blank
    assert re.search(r"^quality\s+not judged", outputs["show imported"], re.M)
    if width == 80:
        for name, out in outputs.items():
            if name.startswith(("list", "compare", "diff")):
                assert all(len(x) <= 80 for x in out.splitlines()
                           if not x.startswith("  ")), name  # formula lines wrap by words
        assert "(sealed" in outputs["list"]  # the seal time gave way first, and said so
