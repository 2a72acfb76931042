//! The plugins, built with cargo and driven through the real `sieve` binary: listing, checking,
//! DRY and top-nσ outputs (insta snapshots and hand-derived vectors), the template, and every
//! fault a plugin file can have.

mod abi1;
mod build;
mod dry;
mod faults;
mod grammar;
mod listing;
mod standalone;
mod template;
mod top_n_sigma;

use std::process::Command;

/// What one run of `sieve` printed and returned.
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

/// Runs `sieve` with `args`, and `SIEVE_PLUGIN_PATH` set to `plugin_path` (or unset).
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

/// Runs `sieve` without `SIEVE_PLUGIN_PATH`.
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

/// `(id, logit)` of every surviving candidate of `sieve apply … --json`, and the selection.
pub fn apply_json(args: &[&str]) -> (Vec<(u32, f32)>, u64) {
    let mut all = vec!["apply", "--json", "--seed", "1"];
    all.extend_from_slice(args);
    let v: serde_json::Value = serde_json::from_str(&ok(&all)).expect("valid JSON");
    let survivors = v["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().expect("id") as u32,
                c["logit"].as_f64().expect("logit") as f32,
            )
        })
        .collect();
    (survivors, v["selected"].as_u64().expect("selected"))
}
