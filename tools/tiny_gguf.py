#!/usr/bin/env python3
"""The tiny Llama of tools/tiny_checkpoint.py as GGUF files for the llama.cpp lanes:
converted to F16 by llama.cpp's own `convert_hf_to_gguf.py` (from the source that
tools/llama_server.sh fetched), then `llama-quantize`d to Q8_0.

The tiny checkpoint's tokenizer is a byte-level BPE trained here, so its pre-tokenizer
hash is not in the converter's list of known models; it is converted with llama.cpp's
`default` pre-tokenizer instead (the only change to the converter's behaviour).

usage: tools/tiny_gguf.py --models DIR --llama-cpp DIR   (DIR: llama.cpp-b<N> cache)
writes DIR/tiny-llama-f16.gguf and DIR/tiny-llama-q8_0.gguf (kept when present)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def convert(source: Path, checkpoint: Path, out: Path) -> None:
    sys.path[:0] = [str(source), str(source / "gguf-py")]
    sys.argv = ["convert_hf_to_gguf.py", str(checkpoint), "--outfile", str(out),
                "--outtype", "f16"]
    from conversion import base  # llama.cpp's converter package

    known = base.TextModel.get_vocab_base_pre

    def pre_tokenizer(self: object, tokenizer: object) -> str:
        try:
            return str(known(self, tokenizer))
        except NotImplementedError:  # the tiny tokenizer: not a published model's
            return "default"

    base.TextModel.get_vocab_base_pre = pre_tokenizer  # type: ignore[method-assign]
    import runpy

    runpy.run_path(str(source / "convert_hf_to_gguf.py"), run_name="__main__")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--llama-cpp", type=Path, required=True)
    parser.add_argument("--convert-only", type=Path, help=argparse.SUPPRESS)
    a = parser.parse_args()
    f16, q8 = a.models / "tiny-llama-f16.gguf", a.models / "tiny-llama-q8_0.gguf"
    if a.convert_only:
        convert(a.llama_cpp / "src", a.models / "tiny-llama", a.convert_only)
        return 0
    if not f16.is_file():
        # its own process: the converter's imports (torch) stay out of the caller
        subprocess.run([sys.executable, __file__, "--models", str(a.models), "--llama-cpp",
                        str(a.llama_cpp), "--convert-only", str(f16)], check=True,
                       capture_output=True)
    if not q8.is_file():
        subprocess.run([str(a.llama_cpp / "bin" / "llama-quantize"), str(f16), str(q8), "Q8_0"],
                       check=True, capture_output=True)
    print(q8)
    return 0


if __name__ == "__main__":
    sys.exit(main())
