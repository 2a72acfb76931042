"""Run llama.cpp's own convert_hf_to_gguf.py on a tiny fixture checkpoint.

The converter names the GGUF's pre-tokenizer (`tokenizer.ggml.pre`) by hashing the ids a
tokenizer gives for a check string, and stops when the hash is unknown. A tiny tokenizer
trained for a fixture is never known, so this wrapper falls back to a named pre-tokenizer
(by default "gpt-2": the fixtures' tokenizers use the GPT-2 byte-level split) when, and only
when, the converter's own detection fails. Everything else is the converter's code, unchanged.

Usage: python tools/gguf/convert.py LLAMA_CPP_DIR MODEL_DIR OUT.gguf OUTTYPE [PRE]
  LLAMA_CPP_DIR  a llama.cpp source tree holding convert_hf_to_gguf.py, conversion/ and
                 gguf-py/ (e.g. the llama-cpp-python sdist's vendor/llama.cpp)
  OUTTYPE        f32, f16 or bf16
"""

import runpy
import sys
from pathlib import Path


def convert(llama_dir, model_dir, out, outtype, pre="gpt-2"):
    llama_dir = Path(llama_dir)
    sys.path.insert(0, str(llama_dir / "gguf-py"))
    sys.path.insert(0, str(llama_dir))
    import conversion.base as base  # the converter's package, from llama_dir

    original = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer):
        try:
            return original(self, tokenizer)
        except NotImplementedError:
            print(f"convert.py: unknown pre-tokenizer hash; writing tokenizer.ggml.pre = {pre!r}")
            return pre

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    argv = sys.argv
    sys.argv = [
        "convert_hf_to_gguf.py",
        str(model_dir),
        "--outfile",
        str(out),
        "--outtype",
        outtype,
    ]
    try:
        runpy.run_path(str(llama_dir / "convert_hf_to_gguf.py"), run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
    finally:
        sys.argv = argv


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    convert(*sys.argv[1:])
