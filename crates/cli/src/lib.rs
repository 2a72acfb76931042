//! # sieve-cli
//!
//! The `sieve` command line as a library; the binary only calls [`run`].
//!
//! - [`cli`]: the top-level parser, the command list and `--plugin`;
//! - [`commands`]: one module per command, each owning its flags and its `run`;
//! - [`pipeline`]: the run's one stage [`sieve_core::Registry`] (built-ins and the stages of
//!   the plugins found by [`plugins`]) and compiling `--sampler` text against it;
//! - [`model`]: opening a model directory (configuration and tokenizer first, weights last);
//!   [`embedded`]: the models inside the binary; [`hub`]: `--model org/name` from the
//!   Hugging Face cache or the Hub;
//! - [`input`]: reading `--logits`/`--probs` lists and files and token-id lists;
//! - [`stats`], [`seed`], [`error`]: timing summaries, the run's seed, failures and exit codes.
//!
//! Every command that builds a pipeline takes `--plugin PATH` (repeatable) and loads the
//! libraries of the `SIEVE_PLUGIN_PATH` directories; the registry is built once, before the
//! command runs, and passed down.
//!
//! Exit codes: 0 ok; 2 bad usage, bad input or a pipeline that does not compile; 1 a runtime
//! failure such as a stage that leaves no candidate (see [`error::Failure`]).
#![warn(missing_docs)]

pub mod chat;
pub mod cli;
pub mod commands;
pub mod embedded;
pub mod error;
pub mod hub;
pub mod input;
pub mod model;
pub mod pipeline;
pub mod plugins;
pub mod seed;
pub mod stats;

pub use commands::bench::workload;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::commands::bench::BenchCommand;
use crate::commands::{apply, bench, check, compare, generate, logits, samplers, serve, template};
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
        Err(e) => return report_clap(&e),
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match execute(&cli.command, &mut out).and_then(|()| out.flush().map_err(Failure::Output)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}

/// Prints clap's help, version or usage error where clap would (help and version on stdout,
/// errors on stderr), checking the write: exit code 1 when it fails (`--help >/dev/full`;
/// 0 for a closed pipe, as for every command), else clap's code (0 for help and version, 2
/// for a usage error).
fn report_clap(e: &clap::Error) -> ExitCode {
    use std::io::IsTerminal;
    let rendered = e.render();
    let result = if e.use_stderr() {
        let text = if io::stderr().is_terminal() {
            rendered.ansi().to_string()
        } else {
            rendered.to_string()
        };
        error::write_stderr(&text).map_err(|_| 1)
    } else {
        let text = if io::stdout().is_terminal() {
            rendered.ansi().to_string()
        } else {
            rendered.to_string()
        };
        let mut out = io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| {
                let failure = Failure::Output(e);
                let _ = failure.report();
                failure.exit_code()
            })
    };
    match result {
        Ok(()) => ExitCode::from(e.exit_code().clamp(0, 255) as u8),
        Err(code) => ExitCode::from(code),
    }
}

/// Runs one parsed command, writing its output to `out`. The stage registry (built-ins and
/// plugins) is built here, once, for the commands that build pipelines.
///
/// # Errors
/// The command's [`Failure`].
pub fn execute(command: &Command, out: &mut dyn Write) -> Result<(), Failure> {
    let text = match command {
        Command::Check(args) => check::run(args, &pipeline::registry(&args.plugins.files)?)?,
        Command::Samplers(args) => samplers::run(args, &pipeline::registry(&args.plugins.files)?),
        Command::Apply(args) => {
            let registry = pipeline::registry(&args.plugins.files)?;
            return apply::run(args, &registry, out);
        }
        Command::Bench(BenchCommand::Sampler(args)) => {
            bench::sampler::run(args, &pipeline::registry(&args.plugins.files)?)?
        }
        Command::Bench(BenchCommand::Model(args)) => bench::model::run(args)?,
        Command::Generate(args) => {
            let registry = pipeline::registry(&args.plugins.files)?;
            return generate::run(args, &registry, out);
        }
        Command::Compare(args) => {
            let registry = pipeline::registry(&args.plugins.files)?;
            return compare::run(args, &registry, out);
        }
        Command::Logits(args) => return logits::run(args, out),
        Command::Serve(args) => return serve::run(args, pipeline::registry(&args.plugins.files)?),
        Command::Template(args) => template::run(args)?,
        Command::Quantize(args) => commands::quantize::run(args)?,
        Command::Chat(args) => {
            let registry = pipeline::registry(&args.plugins.files)?;
            return commands::chat::run(args, &registry, out);
        }
    };
    out.write_all(text.as_bytes()).map_err(Failure::Output)
}
