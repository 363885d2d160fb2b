"""ggml's storage types (bytes per block of values) and llama.cpp's file types (the GGUF
`general.file_type` names `print_info: file type` prints), as llama.cpp b11434 defines
them (ggml/src/ggml.c `type_traits`, src/llama-model-loader.cpp `llama_model_ftype_name`)."""

from __future__ import annotations

import re

# type -> (values per block, bytes per block)
BLOCKS: dict[str, tuple[int, int]] = {
    "f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "f64": (1, 8),
    "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
    "q8_0": (32, 34), "q8_1": (32, 40), "iq4_nl": (32, 18), "mxfp4": (32, 17),
    "q2_K": (256, 84), "q3_K": (256, 110), "q4_K": (256, 144), "q5_K": (256, 176),
    "q6_K": (256, 210), "q8_K": (256, 292), "iq2_xxs": (256, 66), "iq2_xs": (256, 74),
    "iq2_s": (256, 82), "iq3_xxs": (256, 98), "iq3_s": (256, 110), "iq1_s": (256, 50),
    "iq1_m": (256, 56), "iq4_xs": (256, 136), "tq1_0": (256, 54), "tq2_0": (256, 66),
}
FLOATS = frozenset({"f32", "f16", "bf16", "f64"})

# The KV cache types llama-server accepts for --cache-type-k / --cache-type-v.
KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")

# file type -> the ggml type that holds most of its weights
FILE_TYPES: dict[str, str] = {
    "F32": "f32", "F16": "f16", "BF16": "bf16", "Q4_0": "q4_0", "Q4_1": "q4_1",
    "Q5_0": "q5_0", "Q5_1": "q5_1", "Q8_0": "q8_0", "MXFP4_MOE": "mxfp4",
    "Q2_K": "q2_K", "Q2_K_S": "q2_K", "Q3_K_S": "q3_K", "Q3_K_M": "q3_K", "Q3_K_L": "q3_K",
    "Q4_K_S": "q4_K", "Q4_K_M": "q4_K", "Q5_K_S": "q5_K", "Q5_K_M": "q5_K", "Q6_K": "q6_K",
    "TQ1_0": "tq1_0", "TQ2_0": "tq2_0", "IQ2_XXS": "iq2_xxs", "IQ2_XS": "iq2_xs",
    "IQ2_S": "iq2_s", "IQ2_M": "iq2_s", "IQ3_XS": "iq3_xxs", "IQ3_XXS": "iq3_xxs",
    "IQ1_S": "iq1_s", "IQ1_M": "iq1_m", "IQ4_NL": "iq4_nl", "IQ4_XS": "iq4_xs",
    "IQ3_S": "iq3_s", "IQ3_M": "iq3_s",
}
# A ggml type that only one file type is made of (the K-quants have S/M/L mixes).
SOLE_FILE_TYPE = {"q4_0": "Q4_0", "q4_1": "Q4_1", "q5_0": "Q5_0", "q5_1": "Q5_1",
                  "q8_0": "Q8_0", "mxfp4": "MXFP4_MOE", "iq4_nl": "IQ4_NL", "bf16": "BF16",
                  "f16": "F16", "f32": "F32"}
SIZES = {"Small": "S", "Medium": "M", "Large": "L"}
# llama_model_ftype_name's labels whose name is not the file type's
LABELS = {"all F32": "F32", "MXFP4 MoE": "MXFP4_MOE", "IQ3_S mix": "IQ3_M", "Q2_K - Medium": "Q2_K"}


def bits_per_value(ggml_type: str) -> float:
    values, size = BLOCKS[ggml_type]
    return size * 8 / values


def kv_bytes(ggml_type: str, values: int) -> int:
    """Bytes that `values` elements of a cache type take (whole blocks: a K or V row is a
    multiple of the block size)."""
    per_block, size = BLOCKS[ggml_type]
    return -(-values // per_block) * size


def file_type_name(label: str) -> str | None:
    """`Q4_K - Medium` -> Q4_K_M, `IQ4_NL - 4.5 bpw` -> IQ4_NL, `MXFP4 MoE` -> MXFP4_MOE,
    `mostly Q8_0` (old builds) -> Q8_0; None for a label llama.cpp does not print."""
    text = re.sub(r"\s*\(guessed\)$", "", label.strip()).removeprefix("mostly ").strip()
    for printed, name in LABELS.items():
        if text == printed or text.startswith(printed + " -"):
            return name
    text = re.sub(r"\s+-\s+[\d.]+ bpw(?: ternary)?$", "", text)
    sized = re.fullmatch(r"(\w+) - (Small|Medium|Large)", text)
    if sized:
        text = f"{sized.group(1)}_{SIZES[sized.group(2)]}"
    return text if text in FILE_TYPES else None
