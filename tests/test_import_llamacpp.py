"""The lab's Muse-Glimmer-30B Q8 DFlash TP4 packet (llama.cpp on four B70s): imported,
its identity resolved from its llama-server log (the Q8 file that prints `Q4_K - Medium`
is Q8_0 by its tensors) and declared from its `configs/server-args.json`, every declared
value confirmed; the log's mean eval rate is a named formula."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import SHARED

MUSE = SHARED / "lab-claims" / "lab-muse-glimmer-30b-q8-dflash-tp4"
pytestmark = pytest.mark.skipif(not MUSE.is_dir(), reason=f"no lab packet at {MUSE}")


def test_the_muse_packet_imports_with_its_identity(cli, store_home, tmp_path: Path) -> None:
    capsule = tmp_path / "muse"
    shutil.copytree(MUSE, capsule)
    r = cli("import", capsule, "--log", capsule / "evidence" / "canonical-server-run2.log",
            "--json")
    assert r.exit_code == 0, r.stderr
    rid = json.loads(r.stdout)[0]["record"]["id"]
    shown = json.loads(cli("show", rid, "--json").stdout)
    fields = shown["statement"]["predicate"]["identity"]["fields"]

    def value(name: str) -> object:
        return fields[name].get("resolved")

    assert (value("engine.name"), value("engine.version"), value("engine.commit")) == (
        "llama.cpp", "10433", "1ff6bcb6c")
    assert value("precision.weights") == "Q8_0"
    assert "label says 'Q4_K - Medium'" in fields["precision.weights"]["rule"]
    assert value("precision.draft_weights") == "BF16"
    assert (value("precision.kv_cache_k"), value("precision.kv_cache_v")) == ("f16", "f16")
    assert (value("parallel.split_mode"), value("parallel.devices")) == ("tensor", 4)
    assert (value("spec.method"), value("spec.n_max")) == ("draft-dflash", 15)
    assert value("platform.device") == "Intel(R) Arc(TM) Pro B70 Graphics"
    declared = {n: f for n, f in fields.items() if f.get("declared") is not None}
    assert {"runtime.ctx_size", "spec.method", "spec.n_max", "parallel.split_mode",
            "runtime.flash_attn"} <= set(declared)
    assert all(f["status"] == "confirmed" for f in declared.values()), declared
    mean = fields["timing.mean_eval_tps"]
    assert mean["resolved"] == pytest.approx((72.49 + 106.67 + 122.79) / 3, abs=1e-3)
    assert mean["rule"].startswith("mean of 3 print_timing `eval time`")
