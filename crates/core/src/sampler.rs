//! The `Sampler` trait: one stage of a pipeline.

use crate::{Candidates, Context, Error};

/// One stage of a pipeline, modelled on llama.cpp's `llama_sampler_i`.
///
/// A stage transforms the candidates of one step in place: it may change logits (penalties,
/// temperature), mask them to `-inf`, remove candidates (truncation), reorder them, or select
/// one (a *selector*: `dist`, `greedy`, mirostat). After the token is chosen, every stage sees
/// it in [`Sampler::accept`]; [`Sampler::reset`] returns a stage to its freshly built state
/// (random stages replay their seed).
///
/// A stage built with a neutral parameter (`top_k(0)`, `top_p(1)`, `temp(1)`, …) must leave
/// the candidates untouched.
///
/// The stage's name is not the sampler's business: it is written once, in
/// [`Stage::NAME`](crate::Stage::NAME), and the [`Pipeline`](crate::Pipeline) keeps it
/// beside each stage for its error messages.
pub trait Sampler: Send {
    /// Transforms `candidates` for the step described by `cx`.
    ///
    /// # Errors
    /// A stage that cannot do its work (for instance a grammar that admits no token) returns
    /// [`Error::Stage`] naming itself ([`Stage::NAME`](crate::Stage::NAME)).
    fn apply(&mut self, candidates: &mut Candidates, cx: &Context<'_>) -> Result<(), Error>;

    /// Sees the token finally chosen for this step (or a prompt token, before generation).
    fn accept(&mut self, token: u32) {
        let _ = token;
    }

    /// Forgets everything accepted and restarts random streams from their seeds.
    fn reset(&mut self) {}
}
