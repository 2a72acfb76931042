#!/usr/bin/env bash
# The `sieve` Python package (crates/python): its Rust checks, the wheel, and pytest against
# the package API, the plugins, transformers' generate and the vLLM adapter's bookkeeping.
#
#   .ci/python.sh                 # everything (the lead's .ci/run calls it as one step)
#
# The virtualenv comes from PyPI into target/python-venv-<hash of the pinned requirements>,
# made once and reused while the pins stay the same (cold: ~5 GB, torch's CUDA wheel and its
# NVIDIA libraries, a few minutes). The crate is its own cargo workspace (an extension
# module cannot link in `cargo test --workspace`); it builds into target/python.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
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

cd crates/python
step "rustfmt, clippy (warnings are errors), cargo test"
cargo fmt -- --check
cargo clippy --quiet --all-targets -- -D warnings
cargo test --quiet

step "the wheel (maturin, release, abi3)"
rm -rf "$CARGO_TARGET_DIR/wheels"
"$VENV/bin/maturin" build --quiet --release --out "$CARGO_TARGET_DIR/wheels" -i "$VENV/bin/python"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$CARGO_TARGET_DIR"/wheels/*.whl

step "pytest"
cd "$ROOT/target"  # not crates/python: import the installed package, not the source folder
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/crates/python/tests"
