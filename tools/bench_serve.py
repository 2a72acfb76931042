#!/usr/bin/env python3
"""Benchmark `sieve serve`: aggregate output tokens/s, p50/p99 time to first token and
p50/p99 inter-token latency at several concurrency levels, over loopback. Standard library
only (no client to install).

Each level runs `--requests` streamed completions (default: 4 per concurrent client, at
least 8) with `ignore_eos`, so every request generates exactly `--tokens` tokens. Time to
first token runs from sending the request to the first chunk with text; inter-token latency
is the gap between consecutive text chunks; throughput is the level's generated tokens (as
the usage chunks count them) over its wall time.

    python3 tools/bench_serve.py --sieve target/release/sieve --model embedded
    python3 tools/bench_serve.py --url http://127.0.0.1:8080   # a server already running

Prints a Markdown table (or JSON with --json) and the concurrency-16 throughput over one
stream's.
"""

import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request


def percentile(xs, q):
    """The q-quantile of xs, interpolating between ranks (numpy's default)."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def one_request(url, body):
    """Sends one streamed completion; returns (ttft, gaps, tokens)."""
    parsed = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=600)
    start = time.perf_counter()
    conn.request(
        "POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"}
    )
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"status {response.status}: {response.read()[:300]!r}")
    first, last, gaps, tokens = None, None, [], 0
    for raw in response:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if any(c.get("text") for c in chunk.get("choices", [])):
            now = time.perf_counter()
            if first is None:
                first = now
            else:
                gaps.append(now - last)
            last = now
    conn.close()
    return (first - start if first else float("nan")), gaps, tokens


def level(url, concurrency, requests, body):
    """Runs `requests` requests from `concurrency` threads."""
    lock = threading.Lock()
    todo = list(range(requests))
    ttfts, gaps, tokens, errors = [], [], [0], []

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                todo.pop()
            try:
                t, g, n = one_request(url, body)
            except Exception as e:  # reported below, the level goes on
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                ttfts.append(t)
                gaps.extend(g)
                tokens[0] += n

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors:
        print(f"concurrency {concurrency}: {len(errors)} errors, first: {errors[0]}", file=sys.stderr)
    return {
        "concurrency": concurrency,
        "requests": requests,
        "tokens": tokens[0],
        "seconds": wall,
        "tokens_per_second": tokens[0] / wall if wall > 0 else 0.0,
        "ttft_p50_ms": 1000 * percentile(ttfts, 0.5),
        "ttft_p99_ms": 1000 * percentile(ttfts, 0.99),
        "itl_p50_ms": 1000 * percentile(gaps, 0.5),
        "itl_p99_ms": 1000 * percentile(gaps, 0.99),
        "errors": len(errors),
    }


def start_server(sieve, model, parallel, extra):
    proc = subprocess.Popen(
        [sieve, "serve", "--model", model, "--port", "0", "--parallel", str(parallel), *extra],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    line = proc.stderr.readline()
    match = re.search(r"listening on (http://\S+)", line)
    if not match:
        proc.kill()
        sys.exit(f"sieve serve did not start: {line}{proc.stderr.read()}")
    url = match.group(1)
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    for _ in range(6000):
        try:
            with urllib.request.urlopen(url + "/health") as r:
                if r.status == 200:
                    return proc, url
        except Exception:
            time.sleep(0.1)
    proc.kill()
    sys.exit("the model did not load")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="a running server (else one is started with --sieve/--model)")
    p.add_argument("--sieve", default="target/release/sieve")
    p.add_argument("--model", default="embedded")
    p.add_argument("--backend", help="passed to sieve serve")
    p.add_argument("--concurrency", default="1,4,16")
    p.add_argument("--requests", type=int, help="requests per level (default: max(8, 4 x concurrency))")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--prompt", default="Once upon a time")
    p.add_argument("--sampler", default="top_k(40) | temp(0.8)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    levels = [int(c) for c in args.concurrency.split(",")]
    proc = None
    url = args.url
    if url is None:
        extra = ["--backend", args.backend] if args.backend else []
        proc, url = start_server(args.sieve, args.model, max(levels), extra)
    body = {
        "prompt": args.prompt,
        "max_tokens": args.tokens,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "sampler": args.sampler,
        "seed": 1,
    }
    try:
        one_request(url, dict(body, max_tokens=4))  # warm up
        rows = [level(url, c, args.requests or max(8, 4 * c), body) for c in levels]
    finally:
        if proc:
            proc.kill()
            proc.wait()
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"model {args.model}, {args.tokens} tokens per request, pipeline `{args.sampler}`\n")
    print("| concurrency | requests | output tokens/s | TTFT p50 | TTFT p99 | inter-token p50 | inter-token p99 |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['concurrency']} | {r['requests']} | {r['tokens_per_second']:.1f} | "
            f"{r['ttft_p50_ms']:.1f} ms | {r['ttft_p99_ms']:.1f} ms | "
            f"{r['itl_p50_ms']:.1f} ms | {r['itl_p99_ms']:.1f} ms |"
        )
    one = next((r for r in rows if r["concurrency"] == 1), None)
    top = rows[-1]
    if one and top is not one and one["tokens_per_second"] > 0:
        ratio = top["tokens_per_second"] / one["tokens_per_second"]
        print(f"\nconcurrency {top['concurrency']}: {ratio:.1f}x the throughput of one stream")


if __name__ == "__main__":
    main()
