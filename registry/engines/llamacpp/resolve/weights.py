"""A GGUF's weight format from what llama-server printed about it: the file type label
is checked against the tensor-type counts and the file's bits per weight, because the
label can be wrong (a file of mxfp4 experts printed `F16`); when they disagree the
tensors decide, or nothing does."""

from __future__ import annotations

from registry.base.model import Frozen
from registry.engines.llamacpp.ggml import (
    BLOCKS,
    FILE_TYPES,
    FLOATS,
    SOLE_FILE_TYPE,
    bits_per_value,
    file_type_name,
)
from registry.engines.llamacpp.logs import ModelBlock
from registry.logs.facts import Fact

# A file's BPW sits near its main type's: norms in f32 and embeddings at a higher type
# raise it (Q4_K_M files print 4.8-5.0 for q4_K's 4.5, Q2_K up to ~3.3 for 2.625), a
# cheaper type for some tensors lowers it (an IQ4_NL file with iq3_s tensors: 4.25).
BPW_RANGE = (0.75, 1.45)


class WeightsVerdict(Frozen):
    value: str | None
    rule: str
    evidence: list[Fact]


def decide_weights(block: ModelBlock) -> WeightsVerdict:
    """From a model block of the log: its label, tensor-type counts and BPW."""
    label_fact, size_fact = block.first("file_type"), block.first("file_size")
    types = {f.values["type"]: int(f.values["count"]) for f in block.all("tensor_type")}
    value, rule = decide(label_fact.values["label"] if label_fact else None, types,
                         float(size_fact.values["bpw"]) if size_fact else None)
    evidence = [f for f in (label_fact, size_fact) if f] + block.all("tensor_type")
    return WeightsVerdict(value=value, rule=rule, evidence=evidence)


def decide(printed: str | None, types: dict[str, int], bpw: float | None
           ) -> tuple[str | None, str]:
    """The file type, and the rule that decided it (or why nothing did)."""
    label = file_type_name(printed) if printed else None
    if label and _fits(label, types, bpw):
        checked = [what for what, there in (("tensor counts", types), ("BPW", bpw)) if there]
        return label, ("file type label, " + " and ".join(checked) + " agree" if checked
                       else "file type label (no tensor counts or BPW to cross-check it)")
    sole = _sole_quant_type(types)
    if sole and SOLE_FILE_TYPE.get(sole) and _fits(SOLE_FILE_TYPE[sole], types, bpw):
        said = f"the label says {printed!r} but " if printed else ""
        fits = f"the BPW ({bpw}) fits it" if bpw is not None else "no BPW printed"
        return SOLE_FILE_TYPE[sole], (f"tensor counts: {said}{sole} is the only quantized "
                                      f"type, {fits}")
    why = (f"the label {printed!r} disagrees with the tensors or the BPW" if printed
           else "no file type label")
    return None, why + ", and the tensors name no one format"


def _fits(name: str, types: dict[str, int], bpw: float | None) -> bool:
    main = FILE_TYPES[name]
    if types and main not in types:
        return False
    if bpw is None or main not in BLOCKS:
        return True
    low, high = BPW_RANGE
    return low <= bpw / bits_per_value(main) <= high


def _sole_quant_type(types: dict[str, int]) -> str | None:
    quantized = [t for t in types if t not in FLOATS]
    if len(quantized) == 1:
        return quantized[0]
    floats = [t for t in types if t in FLOATS and t != "f32"]
    return floats[0] if not quantized and len(floats) == 1 else None
