"""`registry report --diff A B`: a diff page of two records the user picks (any lanes),
linked from the index; a record's page lists its reproductions with their signed
figures and verdicts."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape

from tests.conftest import ROOT

RUNS = ROOT / "tests" / "data" / "cpu-runs"


def seal(cli, tmp_path, lane: str, *extra: str) -> str:
    run = shutil.copytree(RUNS / lane, tmp_path / f"{lane}-{len(extra)}")
    r = cli("seal", run, "--recipe", ROOT / "recipes" / f"{lane}.toml", "--json", *extra)
    assert r.exit_code == 0, r.stderr
    return str(json.loads(r.stdout)["id"])


def test_a_picked_diff_and_the_reproductions(cli, store_home, tmp_path) -> None:
    bf16, fp8 = seal(cli, tmp_path, "tiny-bf16-kv"), seal(cli, tmp_path, "tiny-fp8-kv")
    again = seal(cli, tmp_path, "tiny-bf16-kv", "--parent", bf16[:12], "--again")
    out = tmp_path / "site"
    r = cli("report", again[:12], "--diff", fp8[:12], bf16[:12], "--out", out)
    assert r.exit_code == 0, r.stderr
    page = out / "diffs" / f"{fp8[:12]}-{bf16[:12]}.html"
    assert page.is_file()  # across lanes and precisions: only because it was picked
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f'href="diffs/{fp8[:12]}-{bf16[:12]}.html"' in index.split("picked diffs")[1]
    assert {x[:12] for x in (bf16, fp8, again)} <= set(re.findall(r"records/(\w{12})", index))
    text = unescape(re.sub(r"<[^>]+>", " ", (out / "records" / f"{bf16}.html").read_text(
        encoding="utf-8")))
    reproductions = re.sub(r"\s+", " ", text.split("reproductions of this record")[1])
    assert reproductions.lstrip().startswith("record sealed decode tok/s quality verdict")
    assert again[:12] in reproductions.split("compare")[0]
    r = cli("report", "--diff", bf16[:12])  # one record is no pair
    assert r.exit_code == 2 and "--diff" in r.stderr
