//! Turning `--sampler` text into a built pipeline, with the stages this build knows.

use sieve_core::{BuildContext, Registry};
use sieve_dsl::Compiled;

use crate::error::Failure;

/// Every stage `sieve` knows: the built-ins.
pub fn registry() -> Registry {
    sieve_samplers::builtin_registry()
}

/// Parses, validates and builds `text`, with `seed` as the run's seed (stages whose `seed` is
/// `-1` use it).
///
/// # Errors
/// [`Failure::Pipeline`] holding the rendered diagnostic (source line, caret, help).
pub fn compile(text: &str, seed: u64) -> Result<Compiled, Failure> {
    let cx = BuildContext { seed, vocab: None };
    sieve_dsl::compile(text, &registry(), &cx).map_err(|d| Failure::Pipeline(d.render(text)))
}
