//! # sieve-cli
//!
//! The `sieve` command line as a library; the binary only calls [`run`].
//!
//! | command | module |
//! |---|---|
//! | `sieve check "<pipeline>"` | [`check`] |
//! | `sieve samplers [--json]` | [`samplers_cmd`] |
//! | `sieve apply --sampler P (--logits L \| --probs L) …` | [`apply`], reading input with [`input`], printing with [`output`] and [`trace`] |
//! | `sieve bench sampler --sampler P --vocab N …` | [`bench`](mod@bench), timing the [`workload`] the criterion benches time too |
//! | `sieve generate [--model DIR] --prompt TEXT …` | [`generate`](mod@generate), opening the model with [`model`] |
//! | `sieve logits --model DIR (--prompt TEXT \| --tokens IDS) …` | [`logits`] |
//! | `sieve bench model --model DIR …` | [`bench_model`] |
//!
//! Every command that builds a pipeline takes `--plugin PATH` (repeatable) and loads the
//! libraries of the `SIEVE_PLUGIN_PATH` directories ([`plugins`]); their stages join the
//! built-ins in [`pipeline::registry`].
//!
//! Exit codes: 0 ok; 2 bad usage, bad input or a pipeline that does not compile; 1 a runtime
//! failure such as a stage that leaves no candidate (see [`error::Failure`]).
#![warn(missing_docs)]

pub mod apply;
pub mod args;
pub mod bench;
pub mod bench_model;
pub mod check;
pub mod distribution;
pub mod error;
pub mod generate;
pub mod input;
pub mod logits;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod plugins;
pub mod samplers_cmd;
pub mod stats;
pub mod trace;
pub mod workload;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::args::{BenchCommand, Cli, Command};
use crate::error::Failure;

/// Runs `sieve` with the process's arguments, writing to stdout and stderr, and returns the
/// exit code.
pub fn run() -> ExitCode {
    run_from(std::env::args_os())
}

/// Runs `sieve` with these arguments (the first is the program name).
pub fn run_from(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version arrive here too, with exit code 0; usage errors with 2.
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match execute(&cli.command, &mut out).and_then(|()| out.flush().map_err(Failure::Output)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// Runs one parsed command, writing its output to `out`.
///
/// # Errors
/// The command's [`Failure`].
pub fn execute(command: &Command, out: &mut dyn Write) -> Result<(), Failure> {
    pipeline::use_plugins(command.plugin_files())?;
    let text = match command {
        Command::Check(args) => check::run(args)?,
        Command::Samplers(args) => {
            let registry = pipeline::registry();
            if args.json {
                samplers_cmd::json(&registry)
            } else {
                samplers_cmd::text(&registry)
            }
        }
        Command::Apply(args) => return apply::run(args, out),
        Command::Bench(BenchCommand::Sampler(args)) => bench::run(args)?,
        Command::Bench(BenchCommand::Model(args)) => bench_model::run(args)?,
        Command::Generate(args) => return generate::run(args, out),
        Command::Logits(args) => return logits::run(args, out),
    };
    out.write_all(text.as_bytes()).map_err(Failure::Output)
}
