//! Running the real `sieve` binary from the integration tests (shared by every test crate
//! here; each uses part of it).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// What one run of `sieve` printed and returned.
pub struct Run {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// The exit code.
    pub code: i32,
}

/// Runs `sieve` with `args`, and `SIEVE_PLUGIN_PATH` set to `plugin_path` (or unset, so that
/// the developer's own plugin directories never change a test's outcome).
pub fn sieve_with(args: &[&str], plugin_path: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sieve"));
    cmd.args(args);
    match plugin_path {
        Some(p) => cmd.env("SIEVE_PLUGIN_PATH", p),
        None => cmd.env_remove("SIEVE_PLUGIN_PATH"),
    };
    let out = cmd.output().expect("run sieve");
    Run {
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        code: out
            .status
            .code()
            .expect("sieve exited normally, not by a signal"),
    }
}

/// Runs `sieve` with `args` and no `SIEVE_PLUGIN_PATH`.
pub fn sieve(args: &[&str]) -> Run {
    sieve_with(args, None)
}

/// Runs `sieve` expecting success and a quiet stderr; returns stdout.
pub fn ok(args: &[&str]) -> String {
    let run = sieve(args);
    assert_eq!(run.code, 0, "sieve {args:?} failed: {}", run.stderr);
    assert_eq!(run.stderr, "", "sieve {args:?} wrote to stderr");
    run.stdout
}

/// Runs `sieve` expecting success; parses stdout as JSON.
pub fn ok_json(args: &[&str]) -> Value {
    let run = sieve(args);
    assert_eq!(run.code, 0, "sieve {args:?} failed: {}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// The repository's `tests/fixtures/models/<name>` directory.
pub fn fixture_model(name: &str) -> String {
    let dir: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "tests",
        "fixtures",
        "models",
        name,
    ]
    .iter()
    .collect();
    dir.to_str().expect("a UTF-8 path").to_string()
}

/// Every position's logits of `model` for the ids 1..=6, with `extra` flags.
pub fn logits(model: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "logits",
        "--model",
        model,
        "--tokens",
        "1,2,3,4,5,6",
        "--all-positions",
        "--json",
    ];
    args.extend(extra);
    ok_json(&args)["logits"].clone()
}
