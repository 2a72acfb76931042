//! The pipeline fuzzer: `cargo run --release -p sieve-tests --example fuzz -- --cases 1000000
//! --seed 1`.
//!
//! Runs `--cases` generated inputs (see `sieve_tests::fuzz`) through parse → validate → build
//! → sample with the built-in registry, each inside `catch_unwind`. Every panic is printed with
//! its case (index, pipeline text, logits, history) and makes the run exit 1; a case that takes
//! longer than `--slow-ms` (default 1000) is reported as slow and also fails the run. At the
//! end it prints the number of cases, how far they got, and cases per second.
//!
//! `--case N` replays case `N` of `--seed` alone (and prints it), to reproduce a report.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use sieve_tests::fuzz::{run_case, Fuzzer, Outcome};

fn usage() -> ExitCode {
    eprintln!("usage: fuzz [--cases N] [--seed S] [--case N] [--slow-ms MS]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut cases: u64 = 100_000;
    let mut seed: u64 = 1;
    let mut only: Option<u64> = None;
    let mut slow_ms: u64 = 1000;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next().and_then(|v| v.parse::<u64>().ok()) else {
            return usage();
        };
        match flag.as_str() {
            "--cases" => cases = value,
            "--seed" => seed = value,
            "--case" => only = Some(value),
            "--slow-ms" => slow_ms = value,
            _ => return usage(),
        }
    }
    // Panics are caught and reported with their case; the default hook would print each one
    // a second time, without the case.
    std::panic::set_hook(Box::new(|_| {}));
    let registry = sieve_samplers::builtin_registry();
    let fuzzer = Fuzzer::new(&registry, seed);
    let range = match only {
        Some(i) => {
            println!("{:#?}", fuzzer.case(i));
            i..i + 1
        }
        None => 0..cases,
    };
    let slow = Duration::from_millis(slow_ms);
    let (mut refused, mut build_failed, mut ran, mut failures) = (0u64, 0u64, 0u64, 0u64);
    let start = Instant::now();
    for i in range.clone() {
        let case = fuzzer.case(i);
        let t = Instant::now();
        let result = run_case(&registry, &case);
        let took = t.elapsed();
        match result {
            Ok(Outcome::Refused) => refused += 1,
            Ok(Outcome::BuildFailed) => build_failed += 1,
            Ok(Outcome::Ran) => ran += 1,
            Err(panic) => {
                failures += 1;
                println!(
                    "PANIC in case {i} (--seed {seed} --case {i}): {}\n{:#?}",
                    panic.message, panic.case
                );
            }
        }
        if took > slow {
            failures += 1;
            println!(
                "SLOW case {i} (--seed {seed} --case {i}): {took:?}, source of {} bytes",
                case.source.len()
            );
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let total = range.end - range.start;
    println!(
        "{total} cases in {elapsed:.1} s ({:.0} cases/s): {refused} refused, {build_failed} \
         refused by a constructor, {ran} ran; {failures} failures",
        total as f64 / elapsed.max(1e-9)
    );
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
