"""`kv_cache_dtype=auto` per quantization method, as vLLM's source decides it
(registry/engines/vllm/resolve/kv.py cites the files): only a compressed-tensors
`kv_cache_scheme` or a modelopt `kv_cache_quant_algo` makes the cache fp8; fp8, quark and
the weight-only methods store the model dtype; a method nobody checked stays unresolved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.checkpoint.inspect import inspect_checkpoint
from registry.engines.vllm.resolve.kv import KVInputs, by_rules
from tests.checkpoints import llama_config


def _inputs(method: str | None, checkpoint: Any = None) -> KVInputs:
    return KVInputs(requested="auto", requested_evidence=None, unquantized=method is None,
                    dynamic_scales=None, model_dtype="torch.bfloat16", checkpoint=checkpoint,
                    version="0.25.0", dtype_line=None, capacity=None, capacity_note=None,
                    quantization=method)


@pytest.mark.parametrize(("method", "value"), [
    ("fp8", "bfloat16"), ("quark", "bfloat16"), ("awq_marlin", "bfloat16"),
    ("gptq_marlin", "bfloat16"), ("bitsandbytes", "bfloat16"), ("gguf", "bfloat16"),
    ("mxfp4", "bfloat16"),
    ("compressed-tensors", None), ("modelopt", None), ("modelopt_fp4", None),
    ("hqq", None), ("inc", None),  # not checked in vLLM's source: never guessed
])
def test_auto_without_a_checkpoint_by_method(method: str, value: str | None) -> None:
    d = by_rules(_inputs(method))
    assert d.value == value, d.rule
    if value:
        assert f"quantization={method}" in d.rule


def _checkpoint(tmp_path: Path, q: dict[str, Any]) -> Any:
    (tmp_path / "config.json").write_text(json.dumps(llama_config(quantization_config=q)))
    return inspect_checkpoint(tmp_path / "config.json")


FP8_KV = {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False,
          "symmetric": True}


@pytest.mark.parametrize(("q", "value"), [
    ({"quant_method": "compressed-tensors", "config_groups": {}, "kv_cache_scheme": FP8_KV},
     "fp8_e4m3"),
    ({"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
     "fp8_e4m3"),
    ({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4",
                                                   "kv_cache_quant_algo": "FP8"}}, "fp8_e4m3"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "bfloat16"),
    # vLLM's Fp8Config never reads the key: the cache stays the model dtype
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "kv_cache_scheme": FP8_KV},
     "bfloat16"),
])
def test_auto_with_the_checkpoint(tmp_path: Path, q: dict[str, Any], value: str) -> None:
    ck = _checkpoint(tmp_path, q)
    assert by_rules(_inputs(q["quant_method"], ck)).value == value


def test_activations_are_an_axis_of_diff_and_of_the_bitwise_teacher() -> None:
    """The same fp8 weights run W8A8 and W8A16: diff names the change first among the
    precision axes, bitwise comparison refuses, and a teacher that names its activations
    binds them (one that names none binds none)."""
    from registry.compare.diff import Side, compare_contracts, compare_identity
    from registry.contracts.bitwise import axis_differences
    from registry.formats.identity import ResolvedField, ResolvedIdentity, Status

    def side(acts: str) -> Side:
        fields = {"precision.weights": ResolvedField(resolved="fp8", status=Status.undeclared),
                  "precision.activations": ResolvedField(resolved=acts,
                                                         status=Status.undeclared)}
        return Side(label=acts, identity=ResolvedIdentity(fields=fields))

    a, b = side("fp8"), side("bfloat16")
    first = compare_identity(a.identity, b.identity)[0]
    assert (first.name, first.changed, first.kind.value) == ("precision.activations", True,
                                                             "identity")
    bitwise = compare_contracts(a, b)[0]
    assert not bitwise.comparable
    assert any(r.startswith("precision.activations fp8 vs bfloat16") for r in bitwise.reasons)
    assert axis_differences({"precision.activations": "fp8"},
                            {"precision.activations": "bfloat16"})
    assert not [d for d in axis_differences({"precision.activations": None},
                                            {"precision.activations": "bfloat16"})
                if d.startswith("precision.activations")]
