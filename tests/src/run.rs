//! Building pipelines from text with the built-in registry, and running them.

use sieve_core::{BuildContext, Candidates, Context, Error, Pipeline};
use sieve_dsl::{Compiled, Diagnostic};

/// The history the snapshot tests use (all of it prompt): token 0 twice, token 1 three times,
/// token 2 once, so that penalties and `no_repeat_ngram(2)` (which bans 1 and 2, the tokens
/// that followed an earlier `1`) have something to do.
pub const HISTORY: [u32; 6] = [0, 1, 1, 2, 0, 1];

/// Parses, validates and builds `source` with the built-in registry and run seed `seed`.
///
/// # Errors
/// The DSL's diagnostic.
pub fn try_compile(source: &str, seed: u64) -> Result<Compiled, Diagnostic> {
    let registry = sieve_samplers::builtin_registry();
    sieve_dsl::compile(source, &registry, &BuildContext { seed, vocab: None })
}

/// [`try_compile`] for pipelines a test knows to be valid.
///
/// # Panics
/// With the rendered diagnostic, if `source` does not compile.
pub fn compile(source: &str, seed: u64) -> Compiled {
    try_compile(source, seed)
        .unwrap_or_else(|d| panic!("`{source}` does not compile:\n{}", d.render(source)))
}

/// One step's result: the selected token (or the pipeline's error) and the candidates as the
/// last stage left them (a selector only marks its choice, so they are the survivors).
#[derive(Debug)]
pub struct Step {
    /// What [`Pipeline::sample`] returned.
    pub outcome: Result<u32, Error>,
    /// The candidates after the run.
    pub candidates: Candidates,
}

/// Runs `pipeline` once on dense `logits` with `history` (all of it prompt).
pub fn step(pipeline: &mut Pipeline, logits: &[f32], history: &[u32]) -> Step {
    let mut candidates = Candidates::from_logits(logits);
    let outcome = pipeline.sample(&mut candidates, &Context::with_history(history));
    Step {
        outcome,
        candidates,
    }
}

/// Generates `n` tokens the way a decoding loop does, with the same `logits` at every step
/// ([`sieve::draw_sequence`]: the prompt is accepted first, then each step samples, accepts
/// and appends its token).
///
/// # Errors
/// The first step's error.
pub fn sequence(
    pipeline: &mut Pipeline,
    logits: &[f32],
    prompt: &[u32],
    n: usize,
) -> Result<Vec<u32>, Error> {
    sieve::draw_sequence(pipeline, logits, prompt, n)
}
