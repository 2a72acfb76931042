"""What tests/fixtures/gguf/ holds and how each piece is made (tiny models, bench models)."""

import hashlib
import json
import shutil
from pathlib import Path

import reference
import tiny_models

# The fixed id sequence every logits fixture is computed on (all ids < the tiny vocab of 320).
IDS = [317, 72, 105, 33, 260, 14, 290, 201, 88, 3, 150, 299]

# Per model: the converter's output types and the llama_model_quantize types (pure: every
# matrix in that type; not pure: llama.cpp's per-tensor recipe). Chosen to cover every type
# once while keeping the committed files small (see tools/llamacpp/README.md).
PLAN = {
    "llama": {
        "convert": ["f16"],
        "quantize": [
            ("Q8_0", True), ("Q4_0", True), ("Q4_1", True), ("Q5_0", True), ("Q5_1", True),
            ("Q2_K", True), ("Q3_K", True), ("Q4_K", True), ("Q5_K", True), ("Q6_K", True),
            ("Q4_K_M", False),
        ],
    },
    "qwen2": {
        "convert": ["bf16"],
        "quantize": [("Q4_0", True)],
    },
}



def make_tiny(args, tool, convert):
    out_root = Path(args.out)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    manifest = {
        "ids": IDS,
        "made_by": {
            "llama_cpp": tool(args, "info", capture=True).strip().splitlines(),
            "script": "tools/make_gguf_fixtures.py tiny",
            "llamacpp_logits": "sieve-llamacpp logits " + " ".join(args.logits_options),
        },
        "logits_layout": "raw little-endian f32, [len(ids), n_vocab], row-major",
        "models": {},
    }
    for name, what in PLAN.items():
        spec = tiny_models.MODELS[name]
        hf_dir = work / "hf" / name
        if hf_dir.exists():
            shutil.rmtree(hf_dir)
        tiny_models.write_model(name, hf_dir)
        out = out_root / name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        original = reference.logits_from_dir(hf_dir, IDS)
        reference.write_f32(out / "hf-original.f32", original)

        f32_src = work / f"{name}-F32.gguf"
        convert(args, hf_dir, f32_src, "f32")
        files = []
        for outtype in what["convert"]:
            dst = out / f"{name}-{outtype.upper()}.gguf"
            if outtype == "f32":
                shutil.copyfile(f32_src, dst)
            else:
                convert(args, hf_dir, dst, outtype)
            files.append((dst, outtype.upper(), True))
        for type_name, pure in what["quantize"]:
            dst = out / f"{name}-{type_name}.gguf"
            words = ["quantize", f32_src, dst, type_name, "--threads", "2"]
            if pure:
                words.append("--pure")
            tool(args, *words)
            files.append((dst, type_name, pure))

        entries = []
        ids_arg = ",".join(map(str, IDS))
        for path, type_name, pure in files:
            stem = path.name[: -len(".gguf")]
            lc_path = out / f"{stem}.llamacpp.f32"
            # make_gguf_fixtures.LOGITS_OPTIONS: f32 KV cache, flash attention off.
            tool(args, "logits", path, ids_arg, lc_path, *args.logits_options)
            lc = reference.read_f32(lc_path, spec["vocab"])
            deq = reference.logits_from_gguf(path, IDS)
            reference.write_f32(out / f"{stem}.hf.f32", deq)
            entries.append({
                "file": path.name,
                "type": type_name,
                "pure": pure,
                "bytes": path.stat().st_size,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "llamacpp_logits": lc_path.name,
                "hf_dequantized_logits": f"{stem}.hf.f32",
                "max_abs_llamacpp_vs_hf_dequantized": reference.max_abs_diff(lc, deq),
                "max_abs_hf_dequantized_vs_original": reference.max_abs_diff(deq, original),
                "max_abs_llamacpp_vs_original": reference.max_abs_diff(lc, original),
            })
            print(f"{path.name}: llama.cpp vs dequantized HF {entries[-1]['max_abs_llamacpp_vs_hf_dequantized']:.3g}",
                  flush=True)
        manifest["models"][name] = {
            "config": {k: v for k, v in spec.items() if k != "seed"},
            "hf_original_logits": "hf-original.f32",
            "files": entries,
        }
    (out_root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"wrote {out_root / 'manifest.json'}")


def make_bench(args, tool, convert):
    """Q8_0, Q4_0 and Q4_K_M GGUFs of tools/make_bench_model.py's model, under --work (not
    committed). The bench model's word-level tokenizer is replaced by the tiny byte-level BPE
    (the converter pads the vocabulary to 49152 with unused entries), since llama.cpp needs a
    vocabulary it can load; only the shape matters for timing."""
    if not args.bench_dir:
        raise SystemExit("bench: pass --bench-dir (the output of tools/make_bench_model.py)")
    work = Path(args.work) / "bench"
    name = getattr(args, "bench_name", None) or "smol-random"
    bf16 = work / f"{name}-BF16.gguf"
    if bf16.is_file():
        print(f"{bf16} exists: reusing it (delete it to convert again)")
    else:
        src = work / ("hf" if name == "smol-random" else f"hf-{name}")
        if src.exists():
            shutil.rmtree(src)
        shutil.copytree(args.bench_dir, src)
        tok = tiny_models.train_tokenizer(320)
        tok.save(str(src / "tokenizer.json"))
        (src / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<|endoftext|>",
            "eos_token": "<|endoftext|>",
        }) + "\n")
        convert(args, src, bf16, "bf16")
    for type_name in ["Q8_0", "Q4_0", "Q4_K_M"]:
        out = work / f"{name}-{type_name}.gguf"
        if out.is_file():
            print(f"{out} exists: reusing it")
            continue
        tool(args, "quantize", bf16, out, type_name, "--threads", "2")
    print(f"bench GGUFs under {work}")
