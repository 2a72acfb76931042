#!/usr/bin/env bash
# The CUDA path against the CPU, on a machine with an NVIDIA GPU (issue 25, item 4).
#
#   tools/gpu_check.sh [--bench-model DIR] [--bandwidth GBPS] [--no-build] [--tolerance T]
#                      [--backend NAME] [--jobs N]
#
# 1. builds `sieve` with `--features cuda` (release);
# 2. for every fixture in tests/fixtures/models, runs `sieve logits --all-positions --json`
#    on `--backend cuda` and on `--backend flex` (the host path) and requires every logit at
#    every position to agree within T (default 1e-3);
# 3. generates greedily (`--sampler greedy`, the fixture's prompt ids) on both and requires
#    the same tokens; every GGUF file of tests/fixtures/gguf/models is checked the same way,
#    both sides with `--dtype f32` (the blocks dequantized once: the host's default
#    multiplies the blocks with 8-bit activations, which the GPU path does not);
#    the fixtures run N at a time (default 4), each process with its own CubeCL caches, and
#    each line is printed as its fixture finishes (kernel compilation dominates a GPU
#    process's time on these tiny models);
# 4. with --bench-model DIR (a SmolLM2-135M-shaped model: `tools/make_bench_model.py DIR`
#    writes one, with torch), runs `sieve bench model --backend cuda --json` and sets its
#    median decode step beside the memory-bandwidth floor: the bytes of weights one step
#    reads over the GPU's bandwidth (--bandwidth GBPS, else a table by the name
#    `nvidia-smi` reports: H100 SXM 3350, H100 PCIe 2000, H200 4800, A100 80GB 2039,
#    A100 40GB 1555, L4 300, RTX 4090 1008).
#
# --backend NAME checks another backend than cuda against flex (`--backend ndarray` rehearses
# the script on a machine without a GPU; the bandwidth is then --bandwidth's).
#
# Needs cargo, python3 (standard library only) and the CUDA driver and NVRTC. Prints a
# summary; exits 1 when any check fails, 2 on a usage or setup error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

bench_model=""
bandwidth=""
build=1
tolerance="1e-3"
gen_tokens=16
backend=cuda
jobs=4

usage() {
    sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --bench-model) bench_model="${2:?--bench-model needs a directory}"; shift 2 ;;
        --bandwidth) bandwidth="${2:?--bandwidth needs GB/s}"; shift 2 ;;
        --tolerance) tolerance="${2:?--tolerance needs a number}"; shift 2 ;;
        --no-build) build=0; shift ;;
        --backend) backend="${2:?--backend needs a name}"; shift 2 ;;
        --jobs) jobs="${2:?--jobs needs a number}"; shift 2 ;;
        -h | --help) usage ;;
        *) echo "gpu_check: unknown argument: $1" >&2; usage ;;
    esac
done

command -v python3 >/dev/null || { echo "gpu_check: python3 is needed" >&2; exit 2; }
if [[ "$backend" == cuda ]]; then
    if ! command -v nvidia-smi >/dev/null; then
        echo "gpu_check: nvidia-smi not found: this needs a machine with an NVIDIA GPU" >&2
        exit 2
    fi
    gpu="$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -n 1)"
else
    gpu="no GPU: $backend rehearsing"
fi
echo "GPU: $gpu"

if [[ $build -eq 1 ]]; then
    cargo build --release -p sieve-cli --features cuda
fi
sieve="$root/target/release/sieve"
[[ -x "$sieve" ]] || { echo "gpu_check: $sieve not built" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

failures=0
summary=()

# Fixture prompt ids: every token of `expected.json` for logits, the greedy prompt for
# generation.
field() {
    python3 - "$1" "$2" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))
if sys.argv[2] == "tokens":
    print(",".join(map(str, e["tokens"])))
else:
    g = e["greedy"]
    print(",".join(map(str, e["tokens"][: g["prompt_tokens"]])))
PY
}

# check_model NAME MODEL TOKENS PROMPT [ARGS...]: the logits and greedy checks of one model,
# `$backend` against flex (both with ARGS), one PASS/FAIL line each on stdout. Runs
# in its own directory so that CubeCL's caches (found from the working directory) are its
# own.
check_model() {
    local name="$1" model="$2" tokens="$3" prompt="$4"
    shift 4
    local dir="$work/$name"
    mkdir -p "$dir/cache"
    cd "$dir" || return
    export XDG_CACHE_HOME="$dir/cache"
    local start=$SECONDS b diff
    "$sieve" logits --model "$model" --tokens "$tokens" --all-positions --json \
        --backend "$backend" "$@" >"$dir/logits.gpu.json" 2>"$dir/err.txt"
    "$sieve" logits --model "$model" --tokens "$tokens" --all-positions --json \
        --backend flex "$@" >"$dir/logits.host.json" 2>>"$dir/err.txt"
    if diff="$(python3 - "$dir/logits.gpu.json" "$dir/logits.host.json" "$tolerance" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["logits"]
b = json.load(open(sys.argv[2]))["logits"]
assert len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b)), "shapes differ"
d = max(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb))
print(f"{d:.3e}")
sys.exit(0 if d <= float(sys.argv[3]) else 1)
PY
    )"; then
        echo "PASS logits  $name: max |$backend - flex| = $diff ($((SECONDS - start)) s)"
    else
        echo "FAIL logits  $name: max |$backend - flex| = ${diff:-no result} (> $tolerance): $(tail -c 300 "$dir/err.txt")"
    fi
    start=$SECONDS
    "$sieve" generate --model "$model" --tokens "$prompt" --sampler greedy \
        --max-tokens "$gen_tokens" --json --backend "$backend" "$@" >"$dir/gen.gpu.json" 2>>"$dir/err.txt"
    "$sieve" generate --model "$model" --tokens "$prompt" --sampler greedy \
        --max-tokens "$gen_tokens" --json --backend flex "$@" >"$dir/gen.host.json" 2>>"$dir/err.txt"
    if python3 - "$dir/gen.gpu.json" "$dir/gen.host.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["tokens"] for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)
PY
    then
        echo "PASS greedy  $name: $gen_tokens tokens equal ($((SECONDS - start)) s)"
    else
        echo "FAIL greedy  $name: $backend and flex generate different tokens: $(tail -c 300 "$dir/err.txt")"
    fi
}

# The models: the safetensors fixtures, then the GGUF fixtures (with the prompt ids of the
# fixture of the same name, dequantized on both sides).
models=()
for dir in tests/fixtures/models/*/; do
    name="$(basename "$dir")"
    [[ -f "$dir/expected.json" ]] || continue
    models+=("$name|$root/$dir|$dir/expected.json|")
done
for file in tests/fixtures/gguf/models/*.gguf; do
    [[ -f "$file" ]] || continue
    name="$(basename "$file" .gguf)"
    expected="tests/fixtures/models/${name%-*}/expected.json"
    [[ -f "$expected" ]] || continue
    models+=("$name.gguf|$root/$file|$expected|--dtype f32")
done

pids=()
for entry in "${models[@]}"; do
    IFS='|' read -r name model expected host <<<"$entry"
    tokens="$(field "$expected" tokens)"
    prompt="$(field "$expected" greedy)"
    # shellcheck disable=SC2086 # the host arguments are words
    (check_model "$name" "$model" "$tokens" "$prompt" $host | tee "$work/$name.result") &
    pids+=($!)
    while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do
        wait -n || true
    done
done
wait
for entry in "${models[@]}"; do
    name="${entry%%|*}"
    while IFS= read -r line; do
        summary+=("$line")
        [[ "$line" == FAIL* ]] && failures=$((failures + 1))
    done <"$work/$name.result"
done

if [[ -n "$bench_model" ]]; then
    if [[ -z "$bandwidth" ]]; then
        case "$gpu" in
            *H200*) bandwidth=4800 ;;
            *H100*PCIe*) bandwidth=2000 ;;
            *H100*) bandwidth=3350 ;;
            *A100*80GB*) bandwidth=2039 ;;
            *A100*) bandwidth=1555 ;;
            *L4*) bandwidth=300 ;;
            *4090*) bandwidth=1008 ;;
            *)
                echo "gpu_check: no bandwidth known for '$gpu': pass --bandwidth GBPS" >&2
                exit 2
                ;;
        esac
    fi
    "$sieve" bench model --model "$bench_model" --backend "$backend" --json >"$work/bench.json"
    summary+=("$(python3 - "$work/bench.json" "$bandwidth" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
gbps = float(sys.argv[2])
floor_ms = r["weights_read_bytes"] / (gbps * 1e9) * 1e3
step = r["decode_median_ms"]
print(
    f"BENCH decode: median {step:.3f} ms/token ({r['decode_tokens_per_s']:.1f} tok/s), "
    f"floor {floor_ms:.3f} ms ({r['weights_read_bytes'] / 1e6:.1f} MB at {gbps:.0f} GB/s), "
    f"{step / floor_ms:.1f}x the floor; prefill {r['prefill_tokens_per_s']:.0f} tok/s"
)
PY
    )")
fi

echo
echo "gpu_check summary ($gpu):"
printf '  %s\n' "${summary[@]}"
if [[ $failures -gt 0 ]]; then
    echo "gpu_check: $failures check(s) failed"
    exit 1
fi
echo "gpu_check: all checks passed"
