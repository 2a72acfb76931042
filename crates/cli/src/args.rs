//! The command line's grammar: clap definitions of every command and flag.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};

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

/// Shown after `sieve apply --help`.
const APPLY_EXAMPLES: &str = "\
Examples:
  sieve apply --sampler \"top_k(2)\" --logits 1,2,3
  sieve apply --sampler \"temp(0.5) | greedy\" --logits=-1.5,0,-inf,2
  sieve apply --sampler \"top_p(0.9)\" --probs probs.json --seed 7 --trace
  sieve apply --sampler \"min_p(0.05)\" --logits logits.npy --history 12,7,7 --json

--logits/--probs take a comma list, or a file: .json (array of numbers; null, \"-inf\",
\"inf\" and \"nan\" allowed), .npy (little-endian float32/float64, shape (N,) or (1, N)),
anything else raw little-endian float32. An argument naming an existing file is a file.";

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
    Check(CheckArgs),
    /// List every stage with its parameters, types, defaults and valid ranges
    Samplers(SamplersArgs),
    /// Run a pipeline on one logits vector and print the selected token and the survivors
    #[command(after_help = APPLY_EXAMPLES)]
    Apply(ApplyArgs),
    /// Generate text with a model and a sampler pipeline, streaming it as it arrives
    #[command(after_help = GENERATE_EXAMPLES)]
    Generate(crate::generate::GenerateArgs),
    /// Print the logits a model gives for a prompt or token ids
    Logits(crate::logits::LogitsArgs),
    /// Time things
    #[command(subcommand)]
    Bench(BenchCommand),
}

const GENERATE_EXAMPLES: &str = "Examples:
  sieve generate --prompt \"Once upon a time\" -n 20 --seed 7 --stats
  sieve generate --model ./SmolLM2-135M --prompt \"The capital of France is\" \\
      --sampler \"penalty(1.1) | temp(0.7) | top_k(40) | top_p(0.9) | min_p(0.05)\" --seed 7 --stop \".\"";

impl Command {
    /// The plugin files named with `--plugin` (none for commands without the flag).
    pub fn plugin_files(&self) -> &[PathBuf] {
        match self {
            Command::Check(a) => &a.plugins.files,
            Command::Samplers(a) => &a.plugins.files,
            Command::Apply(a) => &a.plugins.files,
            Command::Bench(BenchCommand::Sampler(a)) => &a.plugins.files,
            Command::Generate(a) => &a.plugins.files,
            Command::Logits(_) | Command::Bench(BenchCommand::Model(_)) => &[],
        }
    }
}

/// `--plugin PATH`, on every command that builds a pipeline.
#[derive(Debug, Clone, Default, Args)]
pub struct PluginArgs {
    /// Load the sampler stages of this plugin library (repeatable); the libraries in the
    /// directories of SIEVE_PLUGIN_PATH (separated by ':') are loaded too
    #[arg(long = "plugin", value_name = "PATH")]
    pub files: Vec<PathBuf>,
}

/// `sieve check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The pipeline, e.g. "penalty(1.1) | temp(0.7) | top_k(40)"
    #[arg(value_name = "PIPELINE")]
    pub pipeline: String,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// `sieve samplers`.
#[derive(Debug, Args)]
pub struct SamplersArgs {
    /// Print a JSON array instead of the listing
    #[arg(long)]
    pub json: bool,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// `sieve apply`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("input").required(true).args(["logits", "probs"])))]
pub struct ApplyArgs {
    /// The pipeline to run
    #[arg(long, short, value_name = "PIPELINE")]
    pub sampler: String,
    /// Logits: a comma list (1.5,-2,-inf,nan) or a file (.json, .npy, raw float32)
    #[arg(long, value_name = "LIST|FILE", allow_hyphen_values = true)]
    pub logits: Option<String>,
    /// Probabilities in [0, 1] (a comma list or a file); logits are ln(p)
    #[arg(long, value_name = "LIST|FILE", allow_hyphen_values = true)]
    pub probs: Option<String>,
    /// Token ids before this step: the context history, also passed to every stage's accept
    #[arg(long, value_name = "IDS")]
    pub history: Option<String>,
    /// Seed for stages whose seed is -1 (default: a random seed, printed)
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Print {"candidates": [{"id", "logit", "p"}, …], "selected": id, "seed": n}
    #[arg(long, conflicts_with = "trace")]
    pub json: bool,
    /// Show the distribution before the first stage and after every stage
    #[arg(long)]
    pub trace: bool,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// `sieve bench …`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Time a pipeline per token against the floor (one read of the logits)
    #[command(
        after_help = "Example:\n  sieve bench sampler --sampler \"top_k(40) | top_p(0.9)\" --vocab 128256 --iters 500"
    )]
    Sampler(BenchSamplerArgs),
    /// Time a model: prefill tokens/s, decode tokens/s (median step), time to first token
    #[command(
        after_help = "Example:\n  sieve bench model --model ./SmolLM2-135M --prompt-len 256 --gen 32"
    )]
    Model(crate::bench_model::BenchModelArgs),
}

/// `sieve bench sampler`.
#[derive(Debug, Args)]
pub struct BenchSamplerArgs {
    /// The pipeline to time
    #[arg(long, short, value_name = "PIPELINE")]
    pub sampler: String,
    /// Vocabulary size: that many logits drawn from Normal(0, 2.5²) with a fixed seed
    #[arg(long, value_name = "N", required_unless_present = "logits", value_parser = clap::value_parser!(u64).range(1..))]
    pub vocab: Option<u64>,
    /// Time on these logits instead (a file or a comma list)
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub logits: Option<String>,
    /// Number of timed samples (at most 10 000 000)
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub iters: u64,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    /// Plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
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
