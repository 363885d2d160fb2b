"""Text from records is never a control sequence: a model path holding `ESC[2J`, an OSC 52
clipboard write, BEL, CR and a spreadsheet formula reaches no terminal, CSV, Markdown or
page as such (issue 23, item 5); `${REGISTRY_MODELS}` stands only for path-safe text."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from registry.base.text import csv_cell, lines, one_line
from tests.conftest import ROOT

RUN = ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv"
RECIPE = ROOT / "recipes" / "tiny-bf16-kv.toml"
HOSTILE = "=cmd|x!A1\x1b[2J\x1b]52;c;aGk=\x07\u202eevil"  # no CR: the log would split
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b")


def test_controls_are_escaped_and_formulas_quoted() -> None:
    assert one_line("a\x1b[2Jb\nc\rd\x07\x9b\u202e") == "a\\e[2Jb\\nc\\rd\\x07\\x9b\\u202e"
    assert lines("one\ntwo\tx\x1b]52;c;aGk=\x07") == "one\ntwo\tx\\e]52;c;aGk=\\x07"
    assert [csv_cell(x) for x in ("=1+1", "+1", "-1", "@SUM(A1)", "plain", "a=b")] == [
        "'=1+1", "'+1", "'-1", "'@SUM(A1)", "plain", "a=b"]


@pytest.fixture
def hostile(cli, store_home, tmp_path, monkeypatch):
    """The captured BF16 run, its model path made hostile in the log and the launch plan."""
    run = shutil.copytree(RUN, tmp_path / "run")
    for name in ("server.log", "launch.json"):
        path = run / name
        text = path.read_text(encoding="utf-8")
        if name == "launch.json":
            text = text.replace('"/tmp/registry-models/tiny-llama"', json.dumps(HOSTILE))
        else:
            text = text.replace("/tmp/registry-models/tiny-llama", HOSTILE)
        path.write_text(text, encoding="utf-8")
    monkeypatch.delenv("REGISTRY_MODELS", raising=False)
    return run


def test_a_hostile_model_path_is_no_match_for_the_models_variable(cli, hostile) -> None:
    r = cli("seal", hostile, "--recipe", RECIPE, "--json")
    assert r.exit_code != 0 and "model.path" in r.stderr, r.stderr


def test_no_view_prints_a_control_sequence(cli, hostile, monkeypatch) -> None:
    r = cli("seal", hostile, "--recipe", RECIPE, "--allow-mismatch", "model.path", "--reason",
            "attack test",
            "--json")
    assert r.exit_code == 0, r.stderr
    rid = json.loads(r.stdout)["id"][:12]
    monkeypatch.setenv("COLUMNS", "400")  # wide: nothing is wrapped away
    outputs = {
        "show": cli("show", rid), "list": cli("list"), "diff": cli("diff", rid, rid),
        "resolve": cli("resolve", hostile), "resolve record": cli("resolve", rid),
        **{f"compare {fmt}": cli("compare", "--columns", "id,model.path,lane", "--format", fmt)
           for fmt in ("table", "csv", "md")}}
    for name, out in outputs.items():
        assert out.exit_code in (0, 1), (name, out.stderr)
        text = out.stdout + out.stderr
        assert not any(c in text for c in RAW), (name, [c for c in RAW if c in text])
    assert "\\e[2J" in outputs["show"].stdout  # shown, escaped, never run
    [header, row] = list(csv.reader(io.StringIO(outputs["compare csv"].stdout)))
    assert row[header.index("model.path")].startswith("'=cmd|x!A1\\e[2J")
    md = outputs["compare md"].stdout.splitlines()
    assert len(md) == 3 and md[2].count(" | ") == 2  # one row, three cells: no row injected


def test_a_capsule_file_name_with_a_newline_forges_no_finding_line(cli, store_home,
                                                                   tmp_path) -> None:
    from tests.conftest import FIXTURES

    capsule = shutil.copytree(FIXTURES / "laguna-b70-record", tmp_path / "capsule")
    (capsule / "evidence" / "record-run" / "x\nfinding: none\x1b[2J").write_text("planted\n")
    r = cli("import", capsule)
    assert r.exit_code == 0, r.stderr
    assert "\nfinding: none" not in r.stdout and "\x1b" not in r.stdout
    assert "x\\nfinding: none\\e[2J" in r.stdout  # named, escaped, on its own line
