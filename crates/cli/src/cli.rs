//! The command line's top level: the `sieve` parser and the command list; each command's own
//! flags live in its module under [`crate::commands`].

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::commands::{
    apply, bench, chat, check, compare, generate, logits, quantize, samplers, serve, template,
};

/// Shown after `sieve --help`.
const EXAMPLES: &str = "\
Examples:
  sieve check \"temp(0.7) | top_k(40) | top_p(0.9)\"
  sieve samplers
  sieve apply --sampler \"top_k(2)\" --logits 1,2,3
  sieve apply --sampler \"top_k(2) | greedy\" --probs 0.2,0.5,0.3 --trace
  sieve apply --sampler \"min_p(0.1)\" --logits logits.npy --history 5,9 --seed 7 --json
  sieve bench sampler --sampler \"top_k(40) | top_p(0.9)\" --vocab 128256

Exit status: 0 ok; 2 bad usage, bad input or a pipeline that does not compile;
1 a runtime failure (for example a stage that leaves no candidate).";

/// Control how a language model picks its next token: pipelines of sampler stages.
#[derive(Debug, Parser)]
#[command(name = "sieve", version, after_help = EXAMPLES, propagate_version = true)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a pipeline and print its canonical form (every argument named, defaults filled)
    #[command(after_help = "Example:\n  sieve check \"temp(0.7) | top_k(40) | top_p(0.9)\"")]
    Check(check::CheckArgs),
    /// List every stage with its parameters, types, defaults and valid ranges
    Samplers(samplers::SamplersArgs),
    /// Run a pipeline on one logits vector and print the selected token and the survivors
    #[command(after_help = apply::EXAMPLES)]
    Apply(apply::ApplyArgs),
    /// Generate text with a model and a sampler pipeline, streaming it as it arrives
    #[command(after_help = generate::EXAMPLES)]
    Generate(Box<generate::GenerateArgs>),
    /// Compare what pipelines do to the text: diversity, quality under the model, length
    #[command(after_help = compare::EXAMPLES)]
    Compare(compare::CompareArgs),
    /// Print the logits a model gives for a prompt or token ids
    Logits(logits::LogitsArgs),
    /// Print the prompt a model's chat template makes of a conversation, exactly
    #[command(after_help = template::EXAMPLES)]
    Template(template::TemplateArgs),
    /// Time things
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serve the model over OpenAI's HTTP API; every request may bring its own pipeline
    #[command(after_help = serve::EXAMPLES)]
    Serve(serve::ServeArgs),
    /// Talk with a model through its chat template; change the pipeline between turns
    #[command(after_help = chat::EXAMPLES)]
    Chat(Box<chat::ChatArgs>),
    /// Write a GGUF model with its matrices quantized (q8_0, q4_k, …) with llama.cpp's rounding
    #[command(after_help = quantize::EXAMPLES)]
    Quantize(quantize::QuantizeArgs),
}

impl Command {
    /// The plugin files named with `--plugin` (none for commands without the flag).
    pub fn plugin_files(&self) -> &[PathBuf] {
        match self {
            Command::Check(a) => &a.plugins.files,
            Command::Samplers(a) => &a.plugins.files,
            Command::Apply(a) => &a.plugins.files,
            Command::Bench(bench::BenchCommand::Sampler(a)) => &a.plugins.files,
            Command::Generate(a) => &a.plugins.files,
            Command::Compare(a) => &a.plugins.files,
            Command::Serve(a) => &a.plugins.files,
            Command::Chat(a) => &a.plugins.files,
            Command::Logits(_)
            | Command::Template(_)
            | Command::Quantize(_)
            | Command::Bench(bench::BenchCommand::Model(_)) => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::bench::BenchCommand;
    use clap::CommandFactory;

    #[test]
    fn definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn hyphen_values_and_groups() {
        let cli =
            Cli::try_parse_from(["sieve", "apply", "-s", "greedy", "--logits", "-1,-inf"]).unwrap();
        let Command::Apply(a) = cli.command else {
            panic!("not apply")
        };
        assert_eq!(a.logits.as_deref(), Some("-1,-inf"));
        assert!(Cli::try_parse_from(["sieve", "apply", "-s", "greedy"]).is_err());
        assert!(Cli::try_parse_from([
            "sieve", "apply", "-s", "g", "--logits", "1", "--probs", "1"
        ])
        .is_err());
        assert!(Cli::try_parse_from([
            "sieve", "apply", "-s", "g", "--logits", "1", "--json", "--trace"
        ])
        .is_err());
    }

    #[test]
    fn bench_needs_a_vocabulary_or_logits() {
        assert!(Cli::try_parse_from(["sieve", "bench", "sampler", "-s", "greedy"]).is_err());
        assert!(
            Cli::try_parse_from(["sieve", "bench", "sampler", "-s", "greedy", "--vocab", "0"])
                .is_err()
        );
        let cli = Cli::try_parse_from([
            "sieve", "bench", "sampler", "-s", "greedy", "--logits", "x.npy",
        ])
        .unwrap();
        let Command::Bench(BenchCommand::Sampler(b)) = cli.command else {
            panic!("not bench")
        };
        assert_eq!((b.vocab, b.iters), (None, 2000));
    }

    #[test]
    fn every_pipeline_command_takes_repeated_plugins() {
        for args in [
            &["sieve", "check", "greedy"][..],
            &["sieve", "samplers"],
            &["sieve", "apply", "-s", "greedy", "--logits", "1"],
            &["sieve", "bench", "sampler", "-s", "greedy", "--vocab", "4"],
            &["sieve", "generate", "--prompt", "Hi"],
            &["sieve", "chat", "--model", "org/name"],
        ] {
            let mut with: Vec<&str> = args.to_vec();
            with.extend(["--plugin", "a.so", "--plugin", "dir/b.so"]);
            let cli = Cli::try_parse_from(&with).unwrap();
            assert_eq!(
                cli.command.plugin_files(),
                [PathBuf::from("a.so"), PathBuf::from("dir/b.so")],
                "{args:?}"
            );
            let cli = Cli::try_parse_from(args).unwrap();
            assert!(cli.command.plugin_files().is_empty());
        }
    }
}
