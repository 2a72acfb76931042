//! The HTTP request fuzzer (`tests/server_support/fuzz.rs`) against a live `sieve serve` on
//! loopback: a few hundred random and mutated requests over every route and field, with the
//! grammar and DRY plugins loaded and a model with a chat template, so that chat, tools and
//! grammars are reached. Every answer must be a 200 or a clean 4xx/503 in OpenAI's shape,
//! and the server must be healthy at the end.
//!
//! `SIEVE_FUZZ_SEED` and `SIEVE_FUZZ_CASES` change the seed (default 1) and the number of
//! cases (default 300); `SIEVE_FUZZ_STRICT=1` fails the answers of open bugs too (the
//! fuzzer's `KNOWN_BUGS`, otherwise counted and printed); the example `serve_fuzz` runs many more against a release build
//! (see docs/serving.md, "Fuzzing and soak").

mod server_support;

#[path = "server_support/fuzz/mod.rs"]
mod fuzz;

use std::collections::BTreeMap;

use fuzz::{healthy, run_case, Fuzzer, Outcome};
use server_support::{fixture_model, plugin, Server, TIMEOUT};

/// Cases per run: enough to reach every generator and route many times, few enough for a
/// debug build to finish in seconds.
const CASES: u64 = 300;

/// The seed of the run on every `cargo test`.
const SEED: u64 = 1;

/// Stop collecting after this many failures (each is printed whole).
const MAX_FAILURES: usize = 5;

/// An integer from the environment, or `default`.
fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn random_and_mutated_requests_get_clean_answers() {
    let seed = env_u64("SIEVE_FUZZ_SEED", SEED);
    let cases = env_u64("SIEVE_FUZZ_CASES", CASES);
    let strict = env_u64("SIEVE_FUZZ_STRICT", 0) != 0;
    let grammar = plugin("sieve-plugin-grammar");
    let dry = plugin("sieve-plugin-dry");
    let model = fixture_model("qwen3-headdim");
    // A short body timeout: cases whose Content-Length runs past their body wait for it.
    let server = Server::start(&[
        "--model",
        &model,
        "--plugin",
        &grammar,
        "--plugin",
        &dry,
        "--body-timeout",
        "1",
    ]);
    let fuzzer = Fuzzer::new(seed, &model);
    // (generator, route, status) → cases; status 0: the client hung up before the status.
    let mut seen: BTreeMap<(&str, String, u16), u64> = BTreeMap::new();
    let mut known: BTreeMap<&str, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut down = false;
    for i in 0..cases {
        let case = fuzzer.case(i);
        match run_case(server.addr, &case, TIMEOUT, strict) {
            Ok(outcome) => {
                let status = match outcome {
                    Outcome::Status(s) => s,
                    Outcome::HungUp => 0,
                    Outcome::KnownBug(bug) => {
                        *known.entry(bug).or_default() += 1;
                        continue;
                    }
                };
                *seen
                    .entry((case.kind, case.path.clone(), status))
                    .or_default() += 1;
            }
            Err(e) => {
                failures.push(format!(
                    "case {i} of seed {seed}: {e}\n{case}\nreplay: cargo run --release -p \
                     sieve-cli --example serve_fuzz -- --seed {seed} --case {i}"
                ));
                if !healthy(server.addr, TIMEOUT) {
                    down = true;
                    break;
                }
                if failures.len() >= MAX_FAILURES {
                    break;
                }
            }
        }
    }
    let log = server.stderr.lock().unwrap().clone();
    assert!(
        failures.is_empty() && !down,
        "{} failure(s){}:\n\n{}\n\nthe server's last log lines:\n{}",
        failures.len(),
        if down {
            ", then the server was down"
        } else {
            ""
        },
        failures.join("\n\n"),
        tail(&log, 40)
    );
    assert!(
        healthy(server.addr, TIMEOUT),
        "the server is not healthy after the run:\n{}",
        tail(&log, 40)
    );
    let count = |pred: &dyn Fn(&(&str, String, u16)) -> bool| -> u64 {
        seen.iter().filter(|(k, _)| pred(k)).map(|(_, n)| n).sum()
    };
    let summary: Vec<String> = seen
        .iter()
        .map(|((kind, path, status), n)| format!("{kind:>12} {path:<24} {status} × {n}"))
        .collect();
    eprintln!("{cases} cases of seed {seed}:\n{}", summary.join("\n"));
    for (bug, n) in &known {
        eprintln!("known open bug, tolerated (SIEVE_FUZZ_STRICT=1 fails it): {bug} × {n}");
    }
    // The generators must get past the validation and be refused by it: a fuzzer whose
    // requests are all refused (or all accepted) tests little.
    if cases >= CASES {
        let generated = |route: &'static str| {
            count(&|(kind, path, status): &(&str, String, u16)| {
                *kind != "mutated" && path == route && *status == 200
            })
        };
        let refused = count(&|(_, _, status)| *status == 400);
        assert!(
            generated("/v1/completions") >= cases / 20,
            "{}",
            summary.join("\n")
        );
        assert!(
            generated("/v1/chat/completions") >= cases / 20,
            "{}",
            summary.join("\n")
        );
        assert!(refused >= cases / 10, "{}", summary.join("\n"));
        for route in ["/tokenize", "/detokenize", "/v1/models"] {
            assert!(
                count(&|(_, path, status)| path.split('?').next() == Some(route) && *status == 200)
                    > 0,
                "{route}: {}",
                summary.join("\n")
            );
        }
    }
}
