#!/usr/bin/env python3
"""Time HF transformers on a model directory with the protocol of `sieve bench model`, so the
two can be compared side by side (run them alternately, e.g. with farm-bench).

Protocol (as crates/cli/src/commands/bench/model.rs): a prompt of --prompt-len ids cycling
from 1 through the vocabulary; one prefill (reported as the first: time to first token), then
--prefills warm repeats on an empty cache (median), then --gen decode steps, each feeding the
argmax of the previous logits (lowest id on ties) with the KV cache. With --batch N (as
`sieve bench model --batch`): the prompt is prefilled once more, its cache repeated to N rows,
and --gen steps decode the N rows together, each feeding its own argmax. Prints one JSON
object with the keys of `sieve bench model --json` that apply.

Usage: /work/venv/bin/python tools/bench_hf.py DIR [--prompt-len 256] [--gen 32]
       [--prefills 3] [--threads N] [--dtype auto|f32|bf16] [--batch N]
"""

import argparse
import json
import statistics
import time

import torch
from transformers import AutoModelForCausalLM


def median_p90(samples):
    ordered = sorted(samples)
    # The same interpolation as sieve's Summary (linear between closest ranks).
    def quantile(q):
        pos = q * (len(ordered) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    return quantile(0.5), quantile(0.9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--prefills", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="0: torch's default (all cores)")
    ap.add_argument("--dtype", default="f32", choices=["auto", "f32", "bf16"])
    ap.add_argument("--batch", type=int, default=0, help="also decode this many rows at once")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = {"auto": "auto", "f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]

    t = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    model.eval()
    load_s = time.perf_counter() - t
    vocab = model.config.vocab_size
    prompt = torch.tensor([[1 + i % max(vocab - 1, 1) for i in range(args.prompt_len)]])

    prefills = []
    with torch.inference_mode():
        for _ in range(1 + args.prefills):
            t = time.perf_counter()
            out = model(prompt, use_cache=True)
            logits = out.logits[0, -1]
            prefills.append(time.perf_counter() - t)
        past = out.past_key_values
        steps = []
        for _ in range(args.gen):
            nxt = torch.argmax(logits).view(1, 1)
            t = time.perf_counter()
            out = model(nxt, past_key_values=past, use_cache=True)
            logits = out.logits[0, -1]
            steps.append(time.perf_counter() - t)
            past = out.past_key_values
        batch_steps = []
        if args.batch > 0:
            out = model(prompt, use_cache=True)
            past = out.past_key_values
            past.batch_repeat_interleave(args.batch)
            nxt = torch.argmax(out.logits[0, -1]).view(1, 1).repeat(args.batch, 1)
            for _ in range(args.gen):
                t = time.perf_counter()
                out = model(nxt, past_key_values=past, use_cache=True)
                batch_steps.append(time.perf_counter() - t)
                past = out.past_key_values
                nxt = torch.argmax(out.logits[:, -1], dim=-1).view(args.batch, 1)

    first = prefills[0]
    warm = statistics.median(prefills[1:]) if args.prefills else float("nan")
    med, p90 = median_p90([s * 1e3 for s in steps])
    batch = {}
    if batch_steps:
        bmed, bp90 = median_p90([s * 1e3 for s in batch_steps])
        batch = {"batches": [{
            "batch": args.batch,
            "step_median_ms": bmed,
            "step_p90_ms": bp90,
            "tokens_per_s": args.batch * 1e3 / bmed,
            "speedup": args.batch * med / bmed,
        }]}
    print(json.dumps({
        "backend": f"transformers {__import__('transformers').__version__} / torch {torch.__version__}",
        "dtype": str(next(model.parameters()).dtype),
        "threads": torch.get_num_threads(),
        "prompt_len": args.prompt_len,
        "generated": args.gen,
        "load_s": load_s,
        "time_to_first_token_s": first,
        "prefill_tokens_per_s": args.prompt_len / first,
        "warm_prefill_tokens_per_s": args.prompt_len / warm if args.prefills else 0.0,
        "decode_median_ms": med,
        "decode_p90_ms": p90,
        "decode_tokens_per_s": 1e3 / med,
        **batch,
    }, indent=2))


if __name__ == "__main__":
    main()
