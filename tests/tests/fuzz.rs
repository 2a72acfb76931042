//! The fuzz smoke test: a few thousand generated pipelines (see `sieve_tests::fuzz`) through
//! parse → validate → build → sample, none of which may panic. The `fuzz` example runs
//! millions.

use sieve_tests::fuzz::{run_case, Fuzzer, Outcome};

/// Cases per run: enough to reach every generator and every stage many times, few enough to
/// stay within seconds in a debug build.
const CASES: u64 = 2000;

#[test]
fn fuzz_smoke() {
    let registry = sieve_samplers::builtin_registry();
    let fuzzer = Fuzzer::new(&registry, 1);
    let mut counts = [0u64; 3];
    for i in 0..CASES {
        let case = fuzzer.case(i);
        match run_case(&registry, &case) {
            Ok(outcome) => {
                counts[match outcome {
                    Outcome::Refused => 0,
                    Outcome::BuildFailed => 1,
                    Outcome::Ran => 2,
                }] += 1
            }
            Err(panic) => panic!(
                "case {i} of seed 1 panicked: {}\n{:#?}",
                panic.message, panic.case
            ),
        }
    }
    // The generators must reach every step: a fuzzer that never gets past the parser, or
    // never gets refused, tests little.
    assert!(counts[0] > CASES / 10, "refused: {counts:?}");
    assert!(counts[2] > CASES / 10, "ran: {counts:?}");
}

/// Every built-in stage is run by the smoke test's cases at least once.
#[test]
fn fuzz_reaches_every_stage() {
    let registry = sieve_samplers::builtin_registry();
    let fuzzer = Fuzzer::new(&registry, 1);
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..CASES {
        let case = fuzzer.case(i);
        if let Ok(spec) = sieve_dsl::PipelineSpec::parse(&case.source, &registry) {
            seen.extend(spec.stages.iter().map(|s| s.name.clone()));
        }
    }
    let all: std::collections::BTreeSet<String> = registry.names().map(String::from).collect();
    assert_eq!(seen, all);
}
