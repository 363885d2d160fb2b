"""The llama.cpp lanes on a real llama-server CPU build (tools/llama_server.sh) with the
tiny Llama as a Q8_0 GGUF (tools/tiny_gguf.py: llama.cpp's own converter and quantizer):
an f16-KV run and a q8_0-KV run, sealed, diffed and judged. The q8_0 record says q8_0
with the K buffer the arithmetic predicts; the f16 teacher holds for a second f16 run on
a fresh server and refuses the q8_0 lane (a different KV class)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from registry.engines.llamacpp.server import cached_build
from tests.conftest import ROOT
from tests.engine.conftest import run_cli

RECIPES = ROOT / "recipes"
LANE = "tiny-llamacpp-exact"
# CI (tools/test.sh) sets REGISTRY_REQUIRE_LLAMA_CPP: there a missing build fails, never skips
pytestmark = [pytest.mark.llamacpp, pytest.mark.skipif(
    not cached_build().is_file() and not os.environ.get("REGISTRY_REQUIRE_LLAMA_CPP"),
    reason="no llama-server build: run tools/llama_server.sh")]


@pytest.fixture(scope="module")
def gguf_models(tiny_models: Path) -> Path:
    subprocess.run([sys.executable, str(ROOT / "tools" / "tiny_gguf.py"), "--models",
                    str(tiny_models), "--llama-cpp", str(cached_build().parent.parent)],
                   check=True, capture_output=True)
    return tiny_models


@pytest.fixture(scope="module")
def records(home: Path, gguf_models: Path) -> dict[str, tuple[str, Path]]:
    """`registry run` (sealed) of each lane: name -> (record id, run dir)."""
    out: dict[str, tuple[str, Path]] = {}
    for name in ("f16", "q8", "f16-again"):
        recipe = RECIPES / f"tiny-llamacpp-{name.removesuffix('-again')}-kv.toml"
        code, done, stderr = run_cli("run", recipe, "--models", gguf_models,
                                     "--out", home / "runs" / name, "--json")
        assert code == 0, stderr
        out[name] = (done["record"]["id"], home / "runs" / name)
    return out


def identity(rid: str) -> dict[str, Any]:
    code, shown, stderr = run_cli("show", rid, "--json")
    assert code == 0, stderr
    fields: dict[str, Any] = shown["statement"]["predicate"]["identity"]["fields"]
    return fields


def test_the_q8_lane_says_q8_0_with_the_k_buffer_the_arithmetic_predicts(records,
                                                                          gguf_models) -> None:
    from registry.engines.llamacpp.gguf import read_gguf
    from registry.engines.llamacpp.kvgguf import predict

    fields = identity(records["q8"][0])
    assert fields["engine.name"]["resolved"] == "llama.cpp"
    assert fields["engine.version"]["resolved"] == "11434"
    assert fields["precision.kv_cache_k"]["resolved"] == "q8_0"
    assert fields["precision.kv_cache_v"]["resolved"] == "q8_0"
    assert fields["precision.kv_cache_k"]["status"] == "confirmed"
    assert fields["precision.weights"]["resolved"] == "Q8_0"
    cells = fields["kv.cells"]["resolved"]
    pred = predict(read_gguf(gguf_models / "tiny-llama-q8_0.gguf"), "k", "q8_0", cells)
    assert pred is not None and abs(fields["kv.k_mib"]["resolved"] - pred.mib) < 0.01
    assert any("adds up" in (e.get("text") or "")
               for e in fields["precision.kv_cache_k"]["evidence"])


def test_the_f16_lane_says_f16_and_diff_shows_the_kv_class(records) -> None:
    fields = identity(records["f16"][0])
    assert (fields["precision.kv_cache_k"]["resolved"],
            fields["precision.kv_cache_v"]["resolved"]) == ("f16", "f16")
    code, diff, stderr = run_cli("diff", records["f16"][0], records["q8"][0], "--json")
    assert code in (0, 1), stderr
    changed = {d["name"] for d in diff["identity"] if d["changed"]}
    assert {"precision.kv_cache", "precision.kv_cache_k", "precision.kv_cache_v",
            "kv.k_mib"} <= changed


def test_the_f16_teacher_holds_for_f16_and_refuses_q8_0(records) -> None:
    f16, q8, again = (records[n][0] for n in ("f16", "q8", "f16-again"))
    code, _, stderr = run_cli("teacher", "set", f16, "--lane", LANE, "--json")
    assert code == 0, stderr
    code, result, stderr = run_cli("check", again, "--contract", "bitwise-teacher", "--json")
    verdict = result["verdict"]
    assert code == 0 and verdict["status"] == "passed", (stderr, verdict.get("reasons"))
    assert verdict["rows_passed"] == verdict["rows_total"] == 8
    code, result, _ = run_cli("check", q8, "--contract", "bitwise-teacher", "--json")
    assert code == 6 and result["verdict"]["status"] == "refused"
    assert result["verdict"]["reasons"][0].startswith("precision.kv_cache f16 vs q8_0")


def test_the_server_s_timings_are_kept_beside_the_rows(records) -> None:
    from registry.formats import rundir
    from registry.formats.rundir import Bench, read_model

    rows = read_model(records["f16"][1] / rundir.BENCH, Bench).rows
    for row in rows:
        assert row.server_timings and row.server_timings["predicted_n"] == len(row.token_ids)
        assert row.cached_tokens == 0


def test_reproduce_reruns_the_f16_record_on_the_real_server(records, home,
                                                            gguf_models) -> None:
    rid = records["f16"][0]
    code, done, stderr = run_cli("reproduce", rid, "--models", gguf_models, "--out",
                                 home / "runs" / "f16-reproduced", "--json")
    assert code == (0 if done["passed"] else 1), (stderr, done)
    assert done["identity"]["passed"], done["identity"]["differences"]
    [bitwise] = done["contract"]["verdicts"]
    assert bitwise["status"] == "passed" and bitwise["rows_passed"] == 8
