#!/usr/bin/env bash
# Build tools/llamacpp (llama.cpp through the llama-cpp-2 / llama-cpp-sys-2 crates) in two ways:
#
#   default  the sys crate's own choice: GGML_NATIVE=OFF, ggml's AVX2/FMA/F16C build
#            -> target/llamacpp/default/release/sieve-llamacpp
#   native   RUSTFLAGS="-C target-cpu=native" (GGML_NATIVE=ON, -march=native) with clang; where
#            /proc/cpuinfo lists amx_int8, also the __AMX_*__ defines that let ggml's AMX code
#            compile under clang (clang spells its macros __AMXINT8__, ggml checks __AMX_INT8__;
#            GCC 12 miscompiles _tile_loadconfig, hence clang)
#            -> target/llamacpp/native/release/sieve-llamacpp
#
# Usage: tools/llamacpp/build.sh [default|native|all]   (default: all)
# Needs: cargo, cmake, clang, libclang-dev (apt-get install -y libclang-dev clang cmake).
# Takes many minutes on two cores: run it by hand, never from CI.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
which="${1:-all}"

build_default() {
    echo "== default (AVX2) build"
    (cd "$here" && CARGO_TARGET_DIR="$root/target/llamacpp/default" cargo build --release)
}

build_native() {
    local extra=""
    if grep -qw amx_int8 /proc/cpuinfo; then
        extra="-D__AMX_TILE__=1 -D__AMX_INT8__=1 -D__AMX_BF16__=1"
        echo "== native build (clang, AMX-INT8 present: AMX defines on)"
    else
        echo "== native build (clang; no amx_int8 in /proc/cpuinfo: no AMX path)"
    fi
    (cd "$here" && CC=clang CXX=clang++ CFLAGS="$extra" CXXFLAGS="$extra" \
        RUSTFLAGS="-C target-cpu=native" \
        CARGO_TARGET_DIR="$root/target/llamacpp/native" cargo build --release)
}

case "$which" in
    default) build_default ;;
    native) build_native ;;
    all) build_default; build_native ;;
    *) echo "usage: $0 [default|native|all]" >&2; exit 2 ;;
esac
