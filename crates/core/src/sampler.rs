//! The `Sampler` trait: one stage of a pipeline.

use alloc::vec::Vec;

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

    /// What [`Sampler::apply`] will do on the step `cx`, told before the candidates are
    /// loaded, so that a pipeline whose stages up to a `top_k` all say can load only the
    /// candidates that may survive it ([`Pipeline::load`](crate::Pipeline::load)). A stage
    /// answering [`Footprint::Tokens`] pushes the tokens it may change onto `touched`.
    ///
    /// The answer is a promise about `apply` on this step, checked by the property tests of
    /// the built-in stages: the default, [`Footprint::Any`], promises nothing and is always
    /// right.
    fn footprint(&mut self, cx: &Context<'_>, touched: &mut Vec<u32>) -> Footprint {
        let _ = (cx, touched);
        Footprint::Any
    }
}

/// What a stage's next [`Sampler::apply`] does to the candidates, as far as loading only some
/// of them is concerned (see [`Sampler::footprint`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Footprint {
    /// May read or change any candidate: nothing is promised.
    Any,
    /// Leaves the candidates exactly as they are (a neutral stage).
    Nothing,
    /// Changes only the logits of the tokens pushed onto `touched`, each new logit computed
    /// from that token's own logit alone (dense candidates through
    /// [`Candidates::set_logit`], sparse ones through [`Candidates::parts_mut`], with the
    /// same values), and nothing else: no candidate is removed, reordered or selected.
    Tokens,
    /// Multiplies every logit by this factor with [`Candidates::scale_logits`], and does
    /// nothing else.
    Scale(f32),
    /// Keeps the `k` best-ranked candidates with [`Candidates::keep_top`] (`k > 0`), and does
    /// nothing else.
    KeepTop(usize),
}
