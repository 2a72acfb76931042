#!/usr/bin/env python3
"""sieve beside llama.cpp on the same GGUF files: decode ms/token, prefill tokens/s, peak memory.

For each repetition, for each file, runs in turn (alternating, so that a noisy machine disturbs
both alike): `sieve bench model --json` and each llama.cpp build's `sieve-llamacpp bench`
(tools/llamacpp: build it first with tools/llamacpp/build.sh). Same thread count, prompt 256,
64 greedy decode steps. Prints the medians over the repetitions as a Markdown table, and the
raw runs as JSON on stderr.

    python3 tools/bench_gguf.py [--reps 3] [--threads 2] FILE.gguf...

sieve's prefill figure is its warm prefill (the median of prefills after the first), as
llama.cpp's follows an untimed warm-up run. sieve keeps its KV cache in f32 (exact), llama.cpp
in f16 (its default). Peak memory: sieve's is its own `peak_rss_bytes` (read before it
allocates its bandwidth-test buffer); llama.cpp's is the process's maximum resident set
(`wait4`'s `ru_maxrss`), its warm-up and repetition included.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_sieve(file, threads):
    out = subprocess.run(
        [str(ROOT / "target/release/sieve"), "bench", "model", "--model", file, "--prompt-len", "256",
         "--gen", "64", "--threads", str(threads), "--json"],
        check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return {"decode_ms": r["decode_median_ms"], "prefill_tps": r["warm_prefill_tokens_per_s"],
            "rss_mb": r["peak_rss_bytes"] / 1e6, "floor_ms": r["decode_floor_ms"],
            "read_mb": r["weights_read_bytes"] / 1e6, "dtype": r["dtype"]}


def run_llama(build, file, threads):
    binary = ROOT / f"target/llamacpp/{build}/release/sieve-llamacpp"
    proc = subprocess.Popen(
        [str(binary), "bench", file, "--prompt", "256", "--gen", "64", "--threads", str(threads),
         "--reps", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{binary} bench {file}: exit {proc.returncode}")
    r = json.loads(out.strip().splitlines()[-1])
    return {"decode_ms": r["decode_ms_per_token"], "prefill_tps": r["prefill_tokens_per_s"],
            "rss_mb": usage.ru_maxrss * 1024 / 1e6,
            "system_info": r["system_info"], "version": r["llama_cpp"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    engines = ["sieve", "default", "native"]
    runs = {(f, e): [] for f in args.files for e in engines}
    for rep in range(args.reps):
        for f in args.files:
            for e in engines:
                r = run_sieve(f, args.threads) if e == "sieve" else run_llama(e, f, args.threads)
                runs[(f, e)].append(r)
                print(json.dumps({"rep": rep, "file": Path(f).name, "engine": e, **r}), file=sys.stderr)
    med = lambda rs, k: statistics.median(r[k] for r in rs)
    print(f"threads {args.threads}, prompt 256, 64 decode steps, medians of {args.reps} alternating runs")
    print()
    print("| file | size | sieve decode ms | llama.cpp decode ms (AVX2 / native) | decode speedup vs best | "
          "sieve floor ms | sieve prefill tok/s | llama.cpp prefill tok/s (AVX2 / native) | prefill ratio vs best | "
          "sieve peak RSS MB | llama.cpp peak RSS MB (AVX2 / native) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for f in args.files:
        s, d, n = runs[(f, "sieve")], runs[(f, "default")], runs[(f, "native")]
        sd, dd, nd = med(s, "decode_ms"), med(d, "decode_ms"), med(n, "decode_ms")
        sp, dp, np_ = med(s, "prefill_tps"), med(d, "prefill_tps"), med(n, "prefill_tps")
        size = Path(f).stat().st_size / 1e6
        print(f"| {Path(f).name} ({s[0]['dtype']}) | {size:.0f} MB | {sd:.2f} | {dd:.2f} / {nd:.2f} | "
              f"{min(dd, nd) / sd:.2f}x | {med(s, 'floor_ms'):.2f} | {sp:.0f} | {dp:.0f} / {np_:.0f} | "
              f"{sp / max(dp, np_):.2f}x | {med(s, 'rss_mb'):.0f} | "
              f"{med(d, 'rss_mb'):.0f} / {med(n, 'rss_mb'):.0f} |")
    first = runs[(args.files[0], "default")][0]
    print()
    print(f"llama.cpp {first['version']}; AVX2 build: {first['system_info']}")
    print(f"native build: {runs[(args.files[0], 'native')][0]['system_info']}")


if __name__ == "__main__":
    main()
