"""precision.activations: a logged `quantization=fp8` proves fp8 weights, and the activation
half only when evidence says which (the lab's XPU W8A16 switch, a checkpoint's scheme)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from registry.ab.comparable import AXES
from registry.checkpoint.quant import quantization
from registry.claims.match import _quantization
from registry.claims.models import ClaimedIdentity
from registry.formats.identity import FIELDS, PRECISION_AXES, Status
from registry.resolve import resolve_run
from tests.conftest import FIXTURES, ROOT

# the lab's FP8-weights XPU log (`Unknown vLLM environment variable detected:
# VLLM_XPU_FP8_BLOCK_W8A16`) and a launch of the same lab that sets it (`--env ...=1`)
QWEN_LOG = FIXTURES / "xpu-logs/qwen-27b-fp8-weights-tp2-server.log"
LAB_LAUNCH = ROOT / "tests/data/lab/qwen38-27b-fp8-run-id-files/tp1-mtp0-b896-launch.json"
LAB_LOG_FLASH = ROOT / "tests/data/lab/qwen38-flash-next-fp8-died-loading/server.log"


def _run(tmp_path: Path, log: Path, launch: Any = None) -> Path:
    shutil.copy(log, tmp_path / "server.log")
    if isinstance(launch, Path):
        shutil.copy(launch, tmp_path / "launch.json")
    elif launch is not None:
        (tmp_path / "launch.json").write_text(json.dumps(launch))
    return tmp_path


def test_the_field_is_an_identity_axis_of_diff_ab_and_claims() -> None:
    assert "precision.activations" in FIELDS and "precision.activations" in PRECISION_AXES
    assert "precision.activations" in AXES["quality-class"]


def test_a_logged_fp8_named_w8a16_switch_without_its_value_stays_unresolved(tmp_path) -> None:
    r = resolve_run(_run(tmp_path, QWEN_LOG))
    assert r.value("precision.weights") == "fp8"  # never fp8-w8a8 from the method name
    a = r.fields["precision.activations"]
    assert a.resolved is None and a.status is Status.unresolved
    assert "VLLM_XPU_FP8_BLOCK_W8A16" in a.rule and a.evidence[0].line == 14
    assert "launch" in (a.note or "")


def test_the_lab_launch_setting_the_switch_makes_w8a16(tmp_path) -> None:
    r = resolve_run(_run(tmp_path, QWEN_LOG, LAB_LAUNCH))
    a = r.fields["precision.activations"]
    assert a.resolved == "float16" and a.status is Status.undeclared
    assert [e.source for e in a.evidence][:2] == ["launch.json", "server.log"]
    assert a.evidence[0].text == "VLLM_XPU_FP8_BLOCK_W8A16=1"


@pytest.mark.parametrize("launch", [{"env": {"VLLM_XPU_FP8_BLOCK_W8A16": "0"}}, "not json {",
                                    [1, 2], {"argv": "vllm serve"}])
def test_a_launch_that_does_not_set_the_switch_decides_nothing(tmp_path, launch) -> None:
    if isinstance(launch, str):
        _run(tmp_path, QWEN_LOG)
        (tmp_path / "launch.json").write_text(launch)
    else:
        _run(tmp_path, QWEN_LOG, launch)
    a = resolve_run(tmp_path).fields["precision.activations"]
    assert a.resolved is None and a.status is Status.unresolved


def test_fp8_with_nothing_else_is_unresolved_and_says_what_decides(tmp_path) -> None:
    text = QWEN_LOG.read_text().replace("VLLM_XPU_FP8_BLOCK_W8A16", "VLLM_XPU_OTHER_SWITCH")
    (tmp_path / "server.log").write_text(text)
    a = resolve_run(tmp_path).fields["precision.activations"]
    assert a.resolved is None and "quantization=fp8" in a.rule
    assert "checkpoint" in (a.note or "")


def test_the_flash_next_screen_says_nothing_so_nothing_is_claimed() -> None:
    run = ROOT / "tests/data/lab/qwen38-flash-next-fp8-died-loading"  # its launch.json: no switch
    r = resolve_run(run)
    assert r.value("precision.weights") == "fp8"
    assert r.fields["precision.activations"].status is Status.unresolved


def test_a_checkpoint_scheme_decides_the_activations() -> None:
    run = FIXTURES / "laguna-b70-record/evidence/record-run"
    alone = resolve_run(run).fields["precision.activations"]
    assert alone.resolved is None and "does not say" in (alone.note or "")
    target = ROOT / "identities/checkpoints/laguna-s-2.1-int4.config.json"
    a = resolve_run(run, checkpoint=target).fields["precision.activations"]
    assert a.resolved == "bfloat16" and a.evidence[-1].source.endswith("int4.config.json")


FP8 = {"num_bits": 8, "type": "float"}


@pytest.mark.parametrize(("q", "acts"), [
    (None, "bfloat16"),
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8"),
    ({"quant_method": "gptq", "bits": 4}, "bfloat16"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": FP8}}},
     "bfloat16"),
    ({"quant_method": "compressed-tensors",
      "config_groups": {"g": {"weights": FP8, "input_activations": FP8}}}, "fp8"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": FP8, "input_activations": {"num_bits": 8, "type": "int"}}}}, "int8"),
    ({"quant_method": "mxfp4"}, None),  # a method the reader does not know: not said
])
def test_a_checkpoint_config_says_its_activations(q: dict[str, Any] | None, acts) -> None:
    config = {"quantization_config": q} if q else {}
    assert quantization(config, "bfloat16", "config.json").activations == acts


def _claim(weights: str | None, acts: str | None, claimed: str) -> str:
    values = {"precision.weights": weights, "precision.activations": acts}
    return _quantization(ClaimedIdentity(quantization=claimed), values.get).outcome


def test_a_claims_activation_half_is_matched_against_the_field() -> None:
    assert _claim("fp8", "float16", "FP8 W8A16") == "same"
    assert _claim("fp8", "fp8", "FP8 W8A16") == "differs"
    assert _claim("fp8", None, "FP8 W8A16") == "unknown"  # never confirmed by an over-claim
    assert _claim("int4", None, "FP8 W8A16") == "differs"
    assert _claim("int4-w4a16", "bfloat16", "INT4 W4A16") == "same"
    assert _claim("fp8", "fp8", "fp8") == "same"


def test_an_imported_capsule_launch_decides_the_activations(cli, store_home, tmp_path) -> None:
    """Two real files of the lab (its FP8-weights log, a launch of the same lab that sets the
    switch) as one capsule: the importer hands the launch to the resolver."""
    capsule = tmp_path / "capsule"  # beside the home's keys, never holding them
    capsule.mkdir()
    _run(capsule, QWEN_LOG, LAB_LAUNCH)
    r = cli("import", str(capsule), "--json")
    assert r.exit_code == 0, r.stderr
    rid = json.loads(r.stdout)[0]["record"]["id"]
    fields = json.loads(cli("show", rid, "--json").stdout)["statement"]["predicate"][
        "identity"]["fields"]
    assert fields["precision.weights"]["resolved"] == "fp8"
    assert fields["precision.activations"]["resolved"] == "float16"
