//! `sieve apply`: run a pipeline on one logits vector.
//!
//! The history (`--history`) is the step's context (all of it counted as prompt) and is also
//! passed to every stage's `accept`, in order, before the pipeline runs. Without `--seed`, a
//! random seed is chosen and reported, so any run can be repeated.

use std::io::Write;

mod output;
pub mod trace;

use anyhow::Context as _;
use clap::{ArgGroup, Args};
use sieve::outcome::survivors;
use sieve_core::{BuildContext, Candidates, Context, Registry};

use crate::error::{Failure, ResultExt};
use crate::input::{self, parse_history, Scale};
use crate::pipeline;
use crate::plugins::PluginArgs;
use crate::seed::random_seed;
use output::Outcome;
use trace::Trace;

/// Shown after `sieve apply --help`.
pub const EXAMPLES: &str = "\
Examples:
  sieve apply --sampler \"top_k(2)\" --logits 1,2,3
  sieve apply --sampler \"temp(0.5) | greedy\" --logits=-1.5,0,-inf,2
  sieve apply --sampler \"top_p(0.9)\" --probs probs.json --seed 7 --trace
  sieve apply --sampler \"min_p(0.05)\" --logits logits.npy --history 12,7,7 --json

--logits/--probs take a comma list, or a file: .json (array of numbers; null, \"-inf\",
\"inf\" and \"nan\" allowed), .npy (little-endian float32/float64, shape (N,) or (1, N)),
anything else raw little-endian float32. An argument naming an existing file is a file.";

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

/// Runs the command, writing its output to `out`. With `--trace`, the trace is written even
/// when the pipeline then fails, to show where it did.
///
/// # Errors
/// Usage: bad `--logits` / `--probs` / `--history`; pipeline: a `--sampler` that does not
/// compile; runtime: the pipeline fails (for instance no finite candidate is left).
pub fn run(args: &ApplyArgs, registry: &Registry, out: &mut dyn Write) -> Result<(), Failure> {
    let (flag, arg, scale) = match (&args.logits, &args.probs) {
        (Some(arg), _) => ("--logits", arg, Scale::Logits),
        (None, Some(arg)) => ("--probs", arg, Scale::Probs),
        (None, None) => return Err(Failure::usage("give --logits or --probs")),
    };
    let logits = input::load(arg, scale).context(flag).usage()?;
    let history = match &args.history {
        Some(text) => parse_history(text, logits.len())
            .context("--history")
            .usage()?,
        None => Vec::new(),
    };
    let seed = args.seed.unwrap_or_else(random_seed);
    let compiled = pipeline::compile(&args.sampler, registry, &BuildContext { seed, vocab: None })?;
    if !logits.iter().any(|&x| x > f32::NEG_INFINITY) {
        let what = if scale == Scale::Probs {
            "probability is 0"
        } else {
            "logit is -inf or NaN"
        };
        return Err(Failure::Runtime(anyhow::anyhow!(
            "{flag}: every {what}; there is no token to select"
        )));
    }
    let mut pipeline = compiled.pipeline;
    for &token in &history {
        pipeline.accept(token);
    }
    let mut candidates = Candidates::from_logits(&logits);
    let cx = Context::with_history(&history);

    let mut trace = args
        .trace
        .then(|| Trace::new(seed, compiled.spec.to_string(), &candidates));
    let result = pipeline.sample_observed(&mut candidates, &cx, |stage, c| {
        if let Some(trace) = trace.as_mut() {
            trace.push(stage, c);
        }
    });
    if let Some(trace) = &trace {
        out.write_all(trace.render().as_bytes())
            .map_err(Failure::Output)?;
    }
    let selected = result.context("running the pipeline").runtime()?;
    let outcome = Outcome {
        candidates: survivors(&candidates),
        selected,
        seed,
    };
    let text = if args.json {
        outcome.json()
    } else {
        outcome.text()
    };
    out.write_all(text.as_bytes()).map_err(Failure::Output)
}
