"""`registry resolve`: the JSON shape the issue specifies, the table, and no torch/vllm."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import FIXTURES, ROOT

RUN = FIXTURES / "laguna-b70-record/evidence/record-run"
RECIPE = ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml"


def test_json_shape(cli) -> None:
    result = cli("resolve", RUN, "--recipe", RECIPE, "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert {"fields", "expect", "spec_decode", "kv_usage_peak", "errors"} <= set(out)
    kv = out["fields"]["precision.kv_cache"]
    assert {"declared", "resolved", "status", "rule", "evidence"} <= set(kv)
    assert (kv["declared"], kv["resolved"], kv["status"]) == ("bfloat16", "bfloat16", "confirmed")
    line = kv["evidence"][0]
    assert line["source"] == "server.log" and line["text"] == "kv_cache_dtype=bfloat16"
    raw = (RUN / "server.log").read_text().splitlines()[line["line"] - 1]
    assert line["text"] in raw
    assert out["fields"]["engine.version"]["self_reported"] is True
    assert [e["passed"] for e in out["expect"]] == [True, True]
    assert out["spec_decode"]["source"] == "metrics" and out["kv_usage_peak"] == 0.5


def test_table_for_people(cli) -> None:
    result = cli("resolve", RUN, "--recipe", RECIPE)
    assert result.exit_code == 0, result.stderr
    for text in ("precision.kv_cache", "bfloat16", "confirmed", "* self-reported",
                 "dflash-fp8-draft-projections", "acceptance 0.2682"):
        assert text in result.stdout


def test_resolve_never_imports_torch_or_vllm() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from registry.cli import app\n"
        f"r = CliRunner().invoke(app, ['resolve', {str(RUN)!r}, '--recipe', {str(RECIPE)!r},"
        " '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
