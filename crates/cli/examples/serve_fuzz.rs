//! The HTTP request fuzzer of `sieve serve`, for long runs against a release build:
//!
//! ```sh
//! cargo build --release -p sieve-cli -p sieve-plugin-grammar -p sieve-plugin-dry
//! cargo run --release -p sieve-cli --example serve_fuzz -- --cases 100000 --seed 1
//! ```
//!
//! Starts `sieve serve --port 0` (the `sieve` next to this example's directory unless
//! `--sieve PATH`, with `--model` — default the `qwen3-headdim` fixture, which has a chat
//! template — and the grammar and DRY plugins found beside it unless `--plugin` is given),
//! then runs `--cases` generated requests (see `tests/server_support/fuzz.rs`) from `--jobs`
//! threads (default 4). Each failed oracle is printed with its case (seed, index and the
//! request) and makes the run exit 1; so does a server that stops answering `/health` or
//! exits. A case slower than `--slow-ms` (default 10000) is listed, not failed: timings under
//! concurrency vary. Answers showing an open bug the fuzzer's `KNOWN_BUGS` lists are counted
//! (and fail the run with `--strict`). At the end it prints the count of each generator and
//! status, and cases per second.
//!
//! `--case N` sends case `N` of `--seed` alone (and prints it), to reproduce a report.

#[path = "../tests/server_support/fuzz/mod.rs"]
mod fuzz;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuzz::{healthy, run_case, Fuzzer, Outcome};

/// The hang guard: the longest wait for any read of an answer.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Stop after this many failures.
const MAX_FAILURES: u64 = 20;

/// The command line.
struct Args {
    cases: u64,
    seed: u64,
    only: Option<u64>,
    jobs: u64,
    slow_ms: u64,
    strict: bool,
    sieve: PathBuf,
    model: String,
    plugins: Vec<String>,
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: serve_fuzz [--cases N] [--seed S] [--case N] [--jobs N] [--slow-ms MS] [--strict] \
         [--sieve PATH] [--model DIR] [--plugin PATH]..."
    );
    ExitCode::from(2)
}

/// The directory of the `sieve` binary and plugins of this build (the example lives in
/// `target/<profile>/examples/`).
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the example's path");
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn parse_args() -> Option<Args> {
    let dir = build_dir();
    let mut args = Args {
        cases: 100_000,
        seed: 1,
        only: None,
        jobs: 4,
        slow_ms: 10_000,
        strict: false,
        sieve: dir.join("sieve"),
        model: format!(
            "{}/../../tests/fixtures/models/qwen3-headdim",
            env!("CARGO_MANIFEST_DIR")
        ),
        plugins: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--strict" {
            args.strict = true;
            continue;
        }
        let value = it.next()?;
        let number = || value.parse::<u64>().ok();
        match flag.as_str() {
            "--cases" => args.cases = number()?,
            "--seed" => args.seed = number()?,
            "--case" => args.only = Some(number()?),
            "--jobs" => args.jobs = number()?.max(1),
            "--slow-ms" => args.slow_ms = number()?,
            "--sieve" => args.sieve = PathBuf::from(value),
            "--model" => args.model = value,
            "--plugin" => args.plugins.push(value),
            _ => return None,
        }
    }
    if args.plugins.is_empty() {
        for name in ["libsieve_grammar.so", "libsieve_dry.so"] {
            args.plugins.push(dir.join(name).display().to_string());
        }
    }
    Some(args)
}

/// Starts `sieve serve` and waits for its model.
fn start(args: &Args) -> Result<(Child, SocketAddr), String> {
    let mut cmd = Command::new(&args.sieve);
    cmd.args(["serve", "--port", "0", "--model", &args.model])
        .args(["--body-timeout", "1"])
        .env_remove("SIEVE_PLUGIN_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for p in &args.plugins {
        cmd.args(["--plugin", p]);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", args.sieve.display()))?;
    let mut lines = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    let _ = lines.read_line(&mut first);
    let addr = first
        .split("listening on http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok());
    let Some(addr) = addr else {
        let _ = child.kill();
        return Err(format!("sieve serve did not start: {first}"));
    };
    // Keep draining the request log, so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut line = String::new();
        while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
            line.clear();
        }
    });
    let start = Instant::now();
    while !healthy(addr, TIMEOUT) {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            return Err("the model did not load within 120 s".to_string());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok((child, addr))
}

fn main() -> ExitCode {
    let Some(args) = parse_args() else {
        return usage();
    };
    let (mut child, addr) = match start(&args) {
        Ok(started) => started,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let fuzzer = Arc::new(Fuzzer::new(args.seed, &args.model));
    let range = match args.only {
        Some(i) => {
            println!("{}", fuzzer.case(i));
            i..i + 1
        }
        None => 0..args.cases,
    };
    let next = Arc::new(AtomicU64::new(range.start));
    let failures = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let statuses: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let slow = Duration::from_millis(args.slow_ms);
    let started = Instant::now();
    let workers: Vec<_> = (0..args.jobs)
        .map(|_| {
            let (fuzzer, next, failures, stop, statuses) = (
                Arc::clone(&fuzzer),
                Arc::clone(&next),
                Arc::clone(&failures),
                Arc::clone(&stop),
                Arc::clone(&statuses),
            );
            let (end, strict) = (range.end, args.strict);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= end {
                        break;
                    }
                    let case = fuzzer.case(i);
                    let t = Instant::now();
                    let result = run_case(addr, &case, TIMEOUT, strict);
                    let took = t.elapsed();
                    if took > slow {
                        println!(
                            "SLOW case {i} (--seed {} --case {i}): {took:?}",
                            fuzzer.seed()
                        );
                    }
                    let key = match result {
                        Ok(Outcome::Status(s)) => format!("{} {s}", case.kind),
                        Ok(Outcome::HungUp) => format!("{} hung up", case.kind),
                        Ok(Outcome::KnownBug(bug)) => format!("known bug: {bug}"),
                        Err(e) => {
                            println!(
                                "FAILED case {i} (--seed {} --case {i}): {e}\n{case}\n",
                                fuzzer.seed()
                            );
                            if failures.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_FAILURES
                                || !healthy(addr, TIMEOUT)
                            {
                                stop.store(true, Ordering::Relaxed);
                            }
                            format!("{} FAILED", case.kind)
                        }
                    };
                    *statuses.lock().unwrap().entry(key).or_default() += 1;
                    if i % 1000 == 999 {
                        println!("{} cases…", i + 1);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        if w.join().is_err() {
            // The generator itself panicked (printed above): a bug of the fuzzer.
            failures.fetch_add(1, Ordering::Relaxed);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let done: u64 = statuses.lock().unwrap().values().sum();
    let mut failed = failures.load(Ordering::Relaxed);
    let exited = child.try_wait().ok().flatten();
    let alive = exited.is_none() && healthy(addr, TIMEOUT);
    if !alive {
        failed += 1;
        println!("the server is down after the run (exit status {exited:?})");
    }
    let _ = child.kill();
    let _ = child.wait();
    for (key, n) in statuses.lock().unwrap().iter() {
        println!("{key:>20} × {n}");
    }
    println!(
        "{done} cases of seed {} in {elapsed:.1} s ({:.0} cases/s, {} jobs); {failed} failures",
        args.seed,
        done as f64 / elapsed.max(1e-9),
        args.jobs
    );
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
