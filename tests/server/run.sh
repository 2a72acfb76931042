#!/usr/bin/env bash
# Tests `sieve serve` with real clients: the official `openai` Python package (installed from
# PyPI into a virtualenv under target/, so nothing is needed by hand) and curl.
#
#   tests/server/run.sh            # builds sieve (debug) and runs everything
#   SIEVE=path/to/sieve tests/server/run.sh
#
# Exit status 0 when every check passes.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [[ -z "${SIEVE:-}" ]]; then
    cargo build --quiet -p sieve-cli
    SIEVE="${CARGO_TARGET_DIR:-target}/debug/sieve"
fi
# The grammar plugin, for the tool-call tests (a debug build beside a given SIEVE too).
cargo build --quiet -p sieve-plugin-grammar
case "$(uname)" in Darwin) ext=dylib ;; *) ext=so ;; esac
GRAMMAR="${CARGO_TARGET_DIR:-target}/debug/libsieve_grammar.$ext"
VENV="${CARGO_TARGET_DIR:-target}/server-test-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/server/requirements.txt

# curl: start a server, ask for one completion, compare with sieve generate.
log=$(mktemp)
"$SIEVE" serve --model embedded --port 0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 300); do
    addr=$(grep -o 'http://[0-9.:]*' "$log" | head -n 1 || true)
    [[ -n "$addr" ]] && curl -sf "$addr/health" >/dev/null && break
    sleep 0.1
done
[[ -n "$addr" ]] || { echo "sieve serve did not start:"; cat "$log"; exit 1; }
got=$(curl -sS "$addr/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "Once upon a time", "max_tokens": 16, "seed": 3, "sampler": "top_k(20) | temp(0.9)"}' \
    | "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["choices"][0]["text"])')
want=$("$SIEVE" generate --prompt "Once upon a time" -n 16 --seed 3 --sampler "top_k(20) | temp(0.9)")
if [[ "$got" != "$want" ]]; then
    echo "curl: server text differs from sieve generate:"; echo "  $got"; echo "  $want"; exit 1
fi
status=$(curl -s -o /dev/null -w '%{http_code}' "$addr/v1/completions" \
    -H 'Content-Type: application/json' -d '{"prompt": "x", "sampler": "top_q(0.9)"}')
[[ "$status" == 400 ]] || { echo "curl: a bad sampler gave $status, not 400"; exit 1; }
curl -sN "$addr/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "Once", "max_tokens": 3, "stream": true}' \
    | grep -q '^data: \[DONE\]' || { echo "curl: no [DONE] in the stream"; exit 1; }
# curl's -d alone sends a form's content type: refused, as a cross-site form post would be.
status=$(curl -s -o /dev/null -w '%{http_code}' "$addr/v1/completions" -d '{"prompt": "x"}')
[[ "$status" == 415 ]] || { echo "curl: a body without a JSON type gave $status, not 415"; exit 1; }
echo "curl: ok"
kill $pid
wait $pid 2>/dev/null || true
trap - EXIT
rm -f "$log"

"$VENV/bin/python" tests/server/test_openai.py --sieve "$SIEVE" --grammar-plugin "$GRAMMAR"
