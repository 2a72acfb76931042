//! `sieve apply`: run a pipeline on one logits vector.
//!
//! The history (`--history`) is the step's context (all of it counted as prompt) and is also
//! passed to every stage's `accept`, in order, before the pipeline runs. Without `--seed`, a
//! random seed is chosen and reported, so any run can be repeated.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use sieve_core::{Candidates, Context};

use crate::args::ApplyArgs;
use crate::distribution::survivors;
use crate::error::{Failure, ResultExt};
use crate::input::{self, parse_history, Scale};
use crate::output::Outcome;
use crate::pipeline;
use crate::trace::Trace;

/// Runs the command, writing its output to `out`. With `--trace`, the trace is written even
/// when the pipeline then fails, to show where it did.
///
/// # Errors
/// Usage: bad `--logits` / `--probs` / `--history`; pipeline: a `--sampler` that does not
/// compile; runtime: the pipeline fails (for instance no finite candidate is left).
pub fn run(args: &ApplyArgs, out: &mut dyn Write) -> Result<(), Failure> {
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
    let compiled = pipeline::compile(&args.sampler, seed)?;
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

/// A seed from the process's random hasher keys (drawn from the OS), the time and the process
/// id, cut to 53 bits so that it prints and parses exactly everywhere (JSON readers that use
/// doubles, a pipeline's `seed=` argument).
pub fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.finish() >> 11
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_seeds_fit_in_53_bits_and_differ() {
        let seeds: Vec<u64> = (0..8).map(|_| random_seed()).collect();
        assert!(seeds.iter().all(|&s| s < 1 << 53));
        assert!(seeds.windows(2).any(|w| w[0] != w[1]), "{seeds:?}");
    }
}
