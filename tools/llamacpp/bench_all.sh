#!/usr/bin/env bash
# Time llama.cpp's default (AVX2) and native builds on each GGUF, alternating build per file:
# prefill 256 tokens, 64 greedy decode steps, 2 threads (--threads), medians of --reps
# repetitions, and the CPU time per token (a figure a loaded machine disturbs less).
# Prints one text line and one JSON line per (file, build), plus the load average before each.
#
# Usage: tools/llamacpp/bench_all.sh [--reps N] [--threads N] FILE.gguf...
# Build both first (tools/llamacpp/build.sh). Run it on a quiet machine: compare figures only
# within one run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
reps=5
threads=2
while [[ "${1:-}" == --* ]]; do
    case "$1" in
        --reps) reps="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
if [[ $# -eq 0 ]]; then echo "usage: $0 [--reps N] [--threads N] FILE.gguf..." >&2; exit 2; fi

for build in default native; do
    bin="$root/target/llamacpp/$build/release/sieve-llamacpp"
    [[ -x "$bin" ]] || { echo "$bin: not built (tools/llamacpp/build.sh $build)" >&2; exit 2; }
    echo "== $build: $("$bin" info | sed -n 's/^system_info: //p')"
done
for file in "$@"; do
    for build in default native; do
        echo "-- $build $(basename "$file") (load: $(cut -d' ' -f1-3 /proc/loadavg))"
        "$root/target/llamacpp/$build/release/sieve-llamacpp" bench "$file" \
            --prompt 256 --gen 64 --threads "$threads" --reps "$reps"
    done
done
