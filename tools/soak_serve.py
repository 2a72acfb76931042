#!/usr/bin/env python3
"""Soak test of `sieve serve`: a mixed load at a fixed concurrency for minutes, then a report.

Python 3 standard library only (no venv needed).

    cargo build --release -p sieve-cli -p sieve-plugin-grammar
    python3 tools/soak_serve.py --sieve target/release/sieve \
        --model tests/fixtures/models/qwen3-headdim --minutes 10 --concurrency 16

With `--sieve PATH` it starts `sieve serve --port 0 --model M --plugin <grammar>` itself (the
grammar plugin is looked up beside the binary unless `--plugin` is given) and reads the
address from its `listening on http://…` line; with `--url URL` it uses a running server
(give `--pid PID` to report its memory).

Each of `--concurrency` threads sends, until `--minutes` have passed, requests of these kinds
(picked at random, weighted):

- `plain`: a completion (`max_tokens` tokens);
- `stream`: a streamed completion read to `data: [DONE]`;
- `cancel`: a streamed completion whose socket is closed after a few chunks;
- `n`: a completion with `n` = 4 choices;
- `grammar`: a completion constrained by a `response_format` JSON schema, or by a
  `grammar(regex=…)` stage in `sampler` (needs the grammar plugin);
- `tool`: a chat completion with `tools` (`tool_choice` `auto` or `required`), half of them
  streamed;
- `chat`: a streamed chat completion.

`tool` and `chat` need a model with a chat template (the embedded model has none; the fixture
`tests/fixtures/models/qwen3-headdim` has one): they are left out when a first chat request
is refused for want of one (or with `--no-chat`).

The report (text on stdout, JSON with `--json PATH`): requests, successes and errors per
kind (an error is a status other than 200, a transport failure, an answer of the wrong shape,
or a stream not ending in `[DONE]`; a cancelled stream is a success when it got its first
chunk), p50/p99/max latency per kind (to the last byte; to the hang-up for `cancel`) and p50/p99
time to the first chunk of streams, and the server's resident memory (VmRSS from
/proc/PID/status) when the load starts, after the warm-up, at its peak (sampled each second)
and at the end (a few seconds after the load stops); then whether `/health` is still 200.
Exits 1 on any error or an unhealthy server.
"""

import argparse
import collections
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

KINDS = ["plain", "stream", "cancel", "n", "grammar", "tool", "chat"]
WEIGHTS = {"plain": 20, "stream": 20, "cancel": 15, "n": 15, "grammar": 15, "tool": 10, "chat": 5}
PROMPTS = [
    "Once upon a time",
    "The little fox",
    "In a small village by the sea, there lived",
    "Tom and his dog went to the park.",
    "She opened the door and",
]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 12}},
                "required": ["city"],
            },
        },
    }
]


def rss_kb(pid):
    """The resident memory of `pid` in KiB (VmRSS), or None."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def percentile(values, q):
    """The q-th percentile (nearest rank) of `values`, or None."""
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


class Client:
    """Requests to one server, one connection each."""

    def __init__(self, url, timeout):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port or 80
        self.timeout = timeout

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def post(self, path, body):
        """Sends a JSON body; returns the open connection and its response."""
        conn = self.connect()
        data = json.dumps(body).encode()
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json"})
        return conn, conn.getresponse()

    def get(self, path):
        """(status, body) of GET path."""
        conn = self.connect()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


class Failure(Exception):
    """A request that did not get the answer it should."""


def read_events(resp, stop_after=None):
    """Reads `data:` events of a stream; returns (events, time of the first, done)."""
    events, first, done = [], None, False
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        data = line[6:]
        if first is None:
            first = time.monotonic()
        if data == b"[DONE]":
            done = True
            break
        chunk = json.loads(data)
        if "error" in chunk:
            raise Failure("an error chunk: " + data.decode(errors="replace")[:300])
        events.append(chunk)
        if stop_after is not None and len(events) >= stop_after:
            break
    return events, first, done


def expect_200(resp):
    if resp.status != 200:
        body = resp.read()[:300].decode(errors="replace")
        raise Failure(f"status {resp.status}: {body}")


class Soak:
    def __init__(self, args, client, pid, chat):
        self.args = args
        self.client = client
        self.pid = pid
        self.kinds = [k for k in KINDS if chat or k not in ("tool", "chat")]
        self.weights = [WEIGHTS[k] for k in self.kinds]
        self.lock = threading.Lock()
        self.latency = collections.defaultdict(list)
        self.ttft = collections.defaultdict(list)
        self.requests = collections.Counter()
        self.ok = collections.Counter()
        self.errors = collections.Counter()
        self.error_samples = []
        self.notes = collections.Counter()
        self.peak_rss = rss_kb(pid) or 0

    def body(self, rng, **extra):
        b = {
            "prompt": rng.choice(PROMPTS),
            "max_tokens": self.args.max_tokens,
            "seed": rng.randrange(1 << 31),
            "temperature": 0.8,
            "top_k": 40,
        }
        b.update(extra)
        return b

    def one(self, kind, rng):
        """Runs one request of `kind`; returns (latency, ttft or None)."""
        t0 = time.monotonic()
        conn = None
        try:
            if kind == "plain":
                conn, r = self.client.post("/v1/completions", self.body(rng))
                expect_200(r)
                out = json.loads(r.read())
                if len(out["choices"]) != 1:
                    raise Failure("not one choice")
                return time.monotonic() - t0, None
            if kind == "n":
                conn, r = self.client.post("/v1/completions", self.body(rng, n=4))
                expect_200(r)
                out = json.loads(r.read())
                if len(out["choices"]) != 4:
                    raise Failure(f"{len(out['choices'])} choices, not 4")
                return time.monotonic() - t0, None
            if kind in ("stream", "cancel"):
                body = self.body(rng, stream=True, stream_options={"include_usage": True})
                conn, r = self.client.post("/v1/completions", body)
                expect_200(r)
                if kind == "cancel":
                    events, first, _ = read_events(r, stop_after=rng.randint(1, 3))
                    if not events:
                        raise Failure("a stream with no chunk")
                    # Hang up: the response holds the socket's last reference.
                    r.close()
                    conn.close()
                    return time.monotonic() - t0, first - t0
                events, first, done = read_events(r)
                if not done:
                    raise Failure(f"a stream without [DONE] after {len(events)} chunks")
                return time.monotonic() - t0, (first - t0) if first else None
            if kind == "grammar":
                if rng.random() < 0.7:
                    fmt = {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}
                    body = self.body(rng, response_format=fmt)
                else:
                    body = self.body(rng, sampler='grammar(regex="[a-z ]{1,24}") | temp(0.8)')
                body["max_tokens"] = max(self.args.max_tokens, 48)
                conn, r = self.client.post("/v1/completions", body)
                expect_200(r)
                out = json.loads(r.read())
                choice = out["choices"][0]
                if "response_format" in body and choice["finish_reason"] == "stop":
                    try:
                        value = json.loads(choice["text"])
                    except ValueError:
                        raise Failure("a finished json_schema answer that is not JSON: "
                                      + choice["text"][:200])
                    if not (isinstance(value, dict) and {"name", "age"} <= value.keys()):
                        raise Failure("an answer outside the schema: " + choice["text"][:200])
                    self.note("grammar: finished JSON")
                elif "response_format" in body:
                    self.note("grammar: cut by max_tokens")
                return time.monotonic() - t0, None
            if kind in ("tool", "chat"):
                body = {
                    "messages": [{"role": "user", "content": rng.choice(PROMPTS)}],
                    "max_tokens": self.args.max_tokens,
                    "seed": rng.randrange(1 << 31),
                    "temperature": 0.8,
                }
                if kind == "tool":
                    body["tools"] = TOOLS
                    body["tool_choice"] = rng.choice(["auto", "required"])
                    body["max_tokens"] = max(self.args.max_tokens, 48)
                    body["stream"] = rng.random() < 0.5
                else:
                    body["stream"] = True
                conn, r = self.client.post("/v1/chat/completions", body)
                expect_200(r)
                if body["stream"]:
                    events, first, done = read_events(r)
                    if not done:
                        raise Failure(f"a stream without [DONE] after {len(events)} chunks")
                    return time.monotonic() - t0, (first - t0) if first else None
                out = json.loads(r.read())
                reason = out["choices"][0]["finish_reason"]
                self.note(f"tool: finish_reason {reason}")
                return time.monotonic() - t0, None
            raise ValueError(kind)
        finally:
            if conn is not None:
                conn.close()

    def note(self, what):
        with self.lock:
            self.notes[what] += 1

    def worker(self, seed, deadline):
        rng = random.Random(seed)
        while time.monotonic() < deadline:
            kind = rng.choices(self.kinds, self.weights)[0]
            try:
                latency, ttft = self.one(kind, rng)
                with self.lock:
                    self.requests[kind] += 1
                    self.ok[kind] += 1
                    self.latency[kind].append(latency)
                    if ttft is not None:
                        self.ttft[kind].append(ttft)
            except Exception as e:  # every failure is counted and sampled
                with self.lock:
                    self.requests[kind] += 1
                    self.errors[kind] += 1
                    if len(self.error_samples) < 20:
                        self.error_samples.append(f"{kind}: {type(e).__name__}: {e}"[:500])

    def monitor(self, stop):
        while not stop.wait(1.0):
            r = rss_kb(self.pid)
            if r:
                self.peak_rss = max(self.peak_rss, r)

    def run(self):
        a = self.args
        start = time.monotonic()
        deadline = start + a.minutes * 60
        warmup = min(a.warmup, a.minutes * 60 / 4)
        rss = {"start": rss_kb(self.pid)}
        stop = threading.Event()
        mon = threading.Thread(target=self.monitor, args=(stop,), daemon=True)
        mon.start()
        threads = [
            threading.Thread(target=self.worker, args=(a.seed * 1000 + i, deadline), daemon=True)
            for i in range(a.concurrency)
        ]
        for t in threads:
            t.start()
        time.sleep(max(0.0, start + warmup - time.monotonic()))
        rss["after_warmup"] = rss_kb(self.pid)
        with self.lock:
            warm_requests = sum(self.requests.values())
        for t in threads:
            t.join()
        elapsed = time.monotonic() - start
        time.sleep(a.settle)
        stop.set()
        rss["peak"] = self.peak_rss or None
        rss["end"] = rss_kb(self.pid)
        try:
            health = self.client.get("/health")[0]
        except OSError as e:
            health = f"{type(e).__name__}: {e}"
        kinds = {}
        for k in self.kinds:
            lat = self.latency[k]
            kinds[k] = {
                "requests": self.requests[k],
                "ok": self.ok[k],
                "errors": self.errors[k],
                "p50_ms": ms(percentile(lat, 50)),
                "p99_ms": ms(percentile(lat, 99)),
                "max_ms": ms(max(lat) if lat else None),
                "ttft_p50_ms": ms(percentile(self.ttft[k], 50)),
                "ttft_p99_ms": ms(percentile(self.ttft[k], 99)),
            }
        all_lat = [x for k in self.kinds for x in self.latency[k]]
        return {
            "minutes": a.minutes,
            "elapsed_s": round(elapsed, 1),
            "concurrency": a.concurrency,
            "max_tokens": a.max_tokens,
            "model": a.model,
            "warmup_s": round(warmup, 1),
            "requests_during_warmup": warm_requests,
            "requests": sum(self.requests.values()),
            "errors": sum(self.errors.values()),
            "requests_per_s": round(sum(self.requests.values()) / elapsed, 2),
            "p50_ms": ms(percentile(all_lat, 50)),
            "p99_ms": ms(percentile(all_lat, 99)),
            "kinds": kinds,
            "notes": dict(self.notes),
            "error_samples": self.error_samples,
            "rss_kib": rss,
            "health_after": health,
        }


def ms(seconds):
    return None if seconds is None else round(seconds * 1000, 1)


def summary(report):
    lines = [
        f"soak: {report['elapsed_s']} s at concurrency {report['concurrency']} "
        f"(max_tokens {report['max_tokens']}, model {report['model']})",
        f"requests {report['requests']} ({report['requests_per_s']}/s), "
        f"errors {report['errors']}, p50 {report['p50_ms']} ms, p99 {report['p99_ms']} ms",
        f"{'kind':<8} {'requests':>8} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'max ms':>8} {'ttft p50':>8} {'ttft p99':>8}",
    ]
    for k, s in report["kinds"].items():
        lines.append(
            f"{k:<8} {s['requests']:>8} {s['errors']:>6} {fmt(s['p50_ms']):>8} "
            f"{fmt(s['p99_ms']):>8} {fmt(s['max_ms']):>8} {fmt(s['ttft_p50_ms']):>8} "
            f"{fmt(s['ttft_p99_ms']):>8}"
        )
    r = report["rss_kib"]
    lines.append(
        "resident memory (MiB): start {} · after warm-up {} · peak {} · end {}".format(
            *(mib(r.get(x)) for x in ("start", "after_warmup", "peak", "end"))
        )
    )
    for what, n in sorted(report["notes"].items()):
        lines.append(f"  {what}: {n}")
    for e in report["error_samples"]:
        lines.append(f"  error: {e}")
    lines.append(f"/health after the run: {report['health_after']}")
    return "\n".join(lines)


def fmt(v):
    return "-" if v is None else f"{v:.1f}"


def mib(kib):
    return "-" if kib is None else f"{kib / 1024:.1f}"


def start_server(args):
    """Starts `sieve serve`; returns (process, url, log tail)."""
    plugins = args.plugin
    if not plugins:
        lib = os.path.join(os.path.dirname(os.path.abspath(args.sieve)), "libsieve_grammar.so")
        if not os.path.exists(lib):
            sys.exit(f"no grammar plugin at {lib}: build sieve-plugin-grammar or give --plugin")
        plugins = [lib]
    cmd = [args.sieve, "serve", "--port", "0", "--model", args.model]
    for p in plugins:
        cmd += ["--plugin", p]
    cmd += args.serve_arg
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    first = proc.stderr.readline()
    m = re.search(r"listening on (http://\S+)", first)
    if not m:
        proc.kill()
        sys.exit(f"sieve serve did not start: {first}{proc.stderr.read()}")
    tail = collections.deque(maxlen=50)

    def drain():
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))

    threading.Thread(target=drain, daemon=True).start()
    return proc, m.group(1), tail


def chat_available(client):
    """Whether the server's model takes chat requests (it has a chat template)."""
    conn, r = client.post(
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1},
    )
    try:
        r.read()
        return r.status == 200
    finally:
        conn.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--sieve", help="start this sieve binary")
    where.add_argument("--url", help="use the server at this URL (http://127.0.0.1:8080)")
    p.add_argument("--pid", type=int, help="with --url: the server's process, for its memory")
    p.add_argument("--model", default="embedded", help="with --sieve: the model (default embedded)")
    p.add_argument("--plugin", action="append", default=[],
                   help="with --sieve: a plugin (default: libsieve_grammar.so beside the binary)")
    p.add_argument("--serve-arg", action="append", default=[],
                   help="with --sieve: one more argument for sieve serve (repeatable)")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--warmup", type=float, default=30.0,
                   help="seconds of load before the 'after warm-up' memory reading (default 30)")
    p.add_argument("--settle", type=float, default=3.0,
                   help="seconds after the load before the 'end' memory reading (default 3)")
    p.add_argument("--timeout", type=float, default=120.0, help="per-request socket timeout")
    p.add_argument("--no-chat", action="store_true", help="leave out chat and tool requests")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="also write the report here")
    args = p.parse_args()

    proc, tail = None, None
    if args.sieve:
        proc, url, tail = start_server(args)
        pid = proc.pid
    else:
        url, pid = args.url.rstrip("/"), args.pid
    client = Client(url, args.timeout)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if client.get("/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or (proc and proc.poll() is not None):
                sys.exit("the server did not become healthy")
            time.sleep(0.1)
        chat = not args.no_chat and chat_available(client)
        if not chat:
            print("chat and tool requests left out (no chat template, or --no-chat)",
                  file=sys.stderr)
        report = Soak(args, client, pid, chat).run()
        report["url"] = url
        if proc is not None:
            report["server_exited"] = proc.poll()
            report["server_log_tail"] = list(tail)[-10:]
        print(summary(report))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
        healthy = report["health_after"] == 200 and report.get("server_exited") is None
        return 0 if report["errors"] == 0 and healthy else 1
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
