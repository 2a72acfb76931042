"""The cost per engine step of sieve's processor: `Batch.step` over [rows, vocab] float32 logits
and the vLLM processor's `apply` (history assembly included), at 1, 8 and 64 rows and
vocabularies of 49 152 and 151 936; beside it, when vLLM is installed, vLLM's own top-k/top-p
sampling step (`TopKTopPSampler`) on the same logits, and a plain torch equivalent otherwise.

    python crates/python/bench/bench_step.py [--iters 200] [--threads N] [--rows 1,8,64]
        [--vocab 49152,151936] [--no-reference] [--json]

Prints one line per case: median and 90th percentile microseconds per step, and per row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import types

import numpy as np
import torch

import sieve
from sieve import vllm as sv

CARD = "penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)"


def timed(fn, setup, iters):
    times = []
    for _ in range(iters):
        setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return statistics.median(times) * 1e6, times[int(0.9 * (len(times) - 1))] * 1e6


def vllm_sampler():
    try:
        import vllm._custom_ops  # noqa: F401  (loads vllm._C, the CPU sampling kernels)
        from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler
    except Exception:
        return None
    return TopKTopPSampler()


def torch_step(x, k, p):
    """What a top-k/top-p sampling step costs in plain torch: the reference line when vLLM is
    not installed."""
    x = x / 0.7
    vals, idx = torch.topk(x, k, dim=-1)
    probs = torch.softmax(vals, dim=-1)
    cum = probs.cumsum(-1)
    probs[(cum - probs) > p] = 0
    choice = torch.multinomial(probs, 1)
    return idx.gather(-1, choice)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="rows in parallel (default: every CPU)")
    ap.add_argument("--rows", default="1,8,64")
    ap.add_argument("--vocab", default="49152,151936")
    ap.add_argument("--no-reference", action="store_true", help="time sieve only (no vLLM or torch step)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    vsampler = vllm_sampler()
    results = []
    for vocab in [int(v) for v in args.vocab.split(",")]:
        for rows in [int(r) for r in args.rows.split(",")]:
            src = torch.from_numpy((rng.standard_normal((rows, vocab)) * 2.5).astype(np.float32))
            work = src.clone()
            history = [list(range(1, 65)) for _ in range(rows)]
            batch = sieve.Batch([sieve.Pipeline(CARD, seed=i) for i in range(rows)], threads=args.threads)
            for r in range(rows):
                for t in history[r]:
                    batch[r].accept(t)
            lens = [len(h) for h in history]
            step = timed(lambda: batch.step(work, history, lens), lambda: work.copy_(src), args.iters)

            proc = sv.SieveLogitsProcessor(None)
            if args.threads:
                proc.requests.threads = args.threads
            added = [(r, types.SimpleNamespace(extra_args={"sampler": CARD, "seed": r}, seed=None),
                      history[r][:32], list(history[r][32:])) for r in range(rows)]
            proc.update_state(types.SimpleNamespace(removed=[], added=added, moved=[]))
            apply = timed(lambda: proc.apply(work), lambda: (work.copy_(src), proc.update_state(None)), args.iters)

            if args.no_reference:
                ref_name, ref = "no reference", (float("nan"), float("nan"))
            elif vsampler is not None:
                k = torch.full((rows,), 40, dtype=torch.long)
                p = torch.full((rows,), 0.9)
                ref_name = "vllm TopKTopPSampler"
                ref = timed(lambda: vsampler(work / 0.7, {}, k, p), lambda: work.copy_(src), args.iters)
            else:
                ref_name = "torch top-k/top-p step"
                ref = timed(lambda: torch_step(work, 40, 0.9), lambda: work.copy_(src), args.iters)
            row = {
                "vocab": vocab, "rows": rows, "threads": batch.threads,
                "batch_step_us": step, "vllm_apply_us": apply, "reference": ref_name, "reference_us": ref,
            }
            results.append(row)
            if not args.json:
                print(
                    f"vocab {vocab:6d} rows {rows:2d}: Batch.step {step[0]:8.1f} µs (p90 {step[1]:8.1f}, "
                    f"{step[0] / rows:6.1f}/row) | vLLM apply {apply[0]:8.1f} µs ({apply[0] / rows:6.1f}/row) | "
                    f"{ref_name} {ref[0]:8.1f} µs ({ref[0] / rows:6.1f}/row)",
                    flush=True,
                )
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
