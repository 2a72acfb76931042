//! A bounded loopback load test of `sieve serve`: 200 requests, 16 at a time, a tenth of
//! them streamed and cancelled after their first tokens. Every other request must come back
//! with exactly the text `sieve generate` gives for its seed, the server must not panic, and
//! its resident memory must come back within 10 % of its idle value.

mod server_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use server_support::{request, stream_some, Server};

const PROMPT: &str = "Once upon a time";
const REQUESTS: usize = 200;
const CONCURRENCY: usize = 16;
const TOKENS: usize = 12;
const FIRST_SEED: u64 = 1000;

/// Resident memory of `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The texts `sieve generate` gives for seeds `FIRST_SEED..FIRST_SEED + REQUESTS` (with
/// `--num-return`, sequence i of which is exactly the plain run with seed + i).
fn expected() -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args(["generate", "--prompt", PROMPT, "--json"])
        .args(["-n", &TOKENS.to_string(), "--seed", &FIRST_SEED.to_string()])
        .args(["--num-return", &REQUESTS.to_string()])
        .env_remove("SIEVE_PLUGIN_PATH")
        .output()
        .expect("run sieve generate");
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["sequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap().to_string())
        .collect()
}

/// Whether request `i` is one of the tenth cancelled mid-stream.
fn cancelled(i: usize) -> bool {
    i % 10 == 3
}

/// Runs `count` requests from `CONCURRENCY` threads; request `i` uses seed `FIRST_SEED + i`,
/// every tenth is streamed and dropped after two tokens of 200, every other one is checked against
/// `want`. Returns the failures.
fn load(server: &Server, count: usize, want: &Arc<Vec<String>>) -> Vec<String> {
    let next = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (next, failures, want) =
                (Arc::clone(&next), Arc::clone(&failures), Arc::clone(want));
            let addr = server.addr;
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= count {
                    return;
                }
                let seed = FIRST_SEED + i as u64;
                let mut body = json!({"prompt": PROMPT, "max_tokens": TOKENS, "seed": seed});
                if cancelled(i) {
                    // Long enough to be surely mid-stream when the client goes.
                    body["max_tokens"] = json!(200);
                    body["ignore_eos"] = json!(true);
                    body["stream"] = json!(true);
                    drop(stream_some(addr, "/v1/completions", &body, 2));
                    continue;
                }
                let stream = i % 2 == 0;
                body["stream"] = json!(stream);
                let r = request(
                    addr,
                    "POST",
                    "/v1/completions",
                    &[],
                    Some(body.to_string().as_bytes()),
                );
                let text = if r.status != 200 {
                    format!("status {}: {}", r.status, r.body)
                } else if stream {
                    r.events()
                        .iter()
                        .filter(|e| *e != "[DONE]")
                        .map(|e| {
                            let v: Value = serde_json::from_str(e).unwrap();
                            v["choices"][0]["text"].as_str().unwrap_or("").to_string()
                        })
                        .collect()
                } else {
                    r.json()["choices"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_string()
                };
                if text != want[i] {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("request {i}: {text:?} != {:?}", want[i]));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    Arc::try_unwrap(failures).unwrap().into_inner().unwrap()
}

#[test]
fn two_hundred_requests_sixteen_at_a_time_a_tenth_cancelled() {
    let want = Arc::new(expected());
    let server = Server::start(&["--model", "embedded", "--parallel", "16"]);
    // Warm up (allocator arenas, caches) with a first round, then take the idle size.
    assert_eq!(load(&server, 2 * CONCURRENCY, &want), Vec::<String>::new());
    server.wait_until("idle", |s| s.metric("sieve_sequences_running") == 0.0);
    let idle = rss_kib(server.pid());

    let failures = load(&server, REQUESTS, &want);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    server.wait_until("every sequence is freed", |s| {
        s.metric("sieve_sequences_running") == 0.0 && s.metric("sieve_requests_waiting") == 0.0
    });
    let dropped = (0..2 * CONCURRENCY)
        .chain(0..REQUESTS)
        .filter(|&i| cancelled(i))
        .count();
    assert_eq!(
        server.metric("sieve_requests_cancelled_total"),
        dropped as f64
    );
    assert_eq!(server.get("/health").status, 200);
    let after = rss_kib(server.pid());
    assert!(
        after * 10 <= idle * 11,
        "resident memory {after} KiB after the load, {idle} KiB idle"
    );
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(!stderr.contains("panicked"), "{stderr}");
}
