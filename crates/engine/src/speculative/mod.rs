//! Speculative decoding: a cheap drafter proposes `K` tokens, the target model checks them all
//! in one forward pass, and an acceptance rule keeps the output distribution exactly the
//! target's (Leviathan, Kalman & Matias 2023, "Fast Inference from Transformers via
//! Speculative Decoding", arXiv:2211.17192, Algorithm 1; Chen et al. 2023, arXiv:2302.01318).
//!
//! # One round
//! With history `h` (prompt and output so far; the target's cache holds all of it but the
//! last token `t`):
//!
//! 1. **Draft** `x_1 … x_K`: from a draft model, `x_j ~ q_j`, where `q_j` is the draft
//!    pipeline's distribution after `h, x_1 … x_{j−1}`; or by [prompt lookup](mod@lookup),
//!    copied from an earlier occurrence of the last n-gram, `q_j = δ_{x_j}`.
//! 2. **Verify** with one target step feeding `[t, x_1 … x_K]` ([`Feed::all`](crate::Feed::all)): row `i`
//!    gives the logits after `h, x_1 … x_i`.
//! 3. For `i = 1 … K` in order, `p_i` is the target pipeline's distribution at row `i − 1`
//!    (its stages have accepted exactly `h, x_1 … x_{i−1}`); `x_i` is accepted with
//!    probability `min(1, p_i(x_i) / q_i(x_i))`. At the first rejection the token is drawn
//!    from `norm(max(0, p_i − q_i))` and the round ends; if all `K` are accepted, one more
//!    token is drawn from `p_{K+1}`. Each round thus emits between 1 and `K + 1` tokens for
//!    one target forward pass, each distributed exactly as plain sampling would draw it
//!    (the proof is in [`accept`]).
//! 4. Both caches are truncated to the accepted tokens ([`BatchModel::truncate`]).
//!
//! # The pipeline's distribution
//! "The distribution" of a pipeline is what its selector draws from after every other stage
//! ([`Pipeline::transform`]), for target and draft alike, each with its own pipeline instance
//! (the same stages, their own state), as transformers' assisted generation applies its logits
//! processors to both models:
//! - `dist`: the softmax of the surviving candidates ([`Distribution::of_candidates`]);
//! - `greedy`: the point mass on the argmax. Acceptance is then "the draft token is the
//!   target's argmax", and the output is token for token that of plain greedy decoding
//!   (given a model whose logits do not depend on how many tokens a step feeds: the
//!   [`BatchModel`] contract);
//! - any other selector (`mirostat`, `mirostat_v2`, a plugin's) draws from no distribution
//!   it exposes, so draft tokens cannot be accepted exactly: [`Error::SpeculativeSelector`](crate::Error::SpeculativeSelector).
//!
//! The selector stage itself never runs on the `dist` path: the draws (draft tokens,
//! acceptance, residual, the extra token) come from one ChaCha8 stream
//! ([`sieve_core::SieveRng`], stream `"speculative"`) seeded with
//! [`SpeculativeOptions::seed`]. A `dist(seed = …)` written in the pipeline is therefore not
//! seen; the caller passes the seed it wants here (the run's `--seed`, or `dist`'s own). The
//! same seed gives the same tokens on every run, but not the tokens plain sampling gives
//! with that seed: only their distribution is the same.
//!
//! # Stage state
//! Stages see exactly the accepted tokens:
//! - the target pipeline computes `p_1, p_2, …` in order and accepts each emitted token
//!   before the next position, so it never sees a rejected one and needs no rollback; its
//!   transforming stages run once per emitted token, as in plain decoding;
//! - the draft pipeline accepts `x_1 … x_K` while drafting. When all are accepted it just
//!   accepts the extra token; after a rejection it is **reset and replayed**: the prompt
//!   (with [`GenerateOptions::accept_prompt`]) and every emitted token go through
//!   [`Pipeline::accept`] again. A random draft stage (`xtc`) restarts its stream from its
//!   seed at every replay, so its draws repeat from round to round: that changes `q`, hence
//!   the acceptance rate, never the output distribution, which is exact for any `q`.
//!
//! # Limits
//! A round drafts at most `min(K, max_tokens − generated − 1)` tokens (the extra token fills
//! the budget) and no more than the target's context (and the draft model's) can hold; a
//! draft model's run stops after it drafts an EOS id; prompt lookup cuts before one. EOS, stop
//! strings, `max_tokens` and the context end the generation at the exact token, in the middle
//! of an accepted run, through the same [`Decoder`](crate::Decoder) (the [step](crate::step)) as plain
//! decoding. Cancellation is checked before every round. The first token comes from the
//! prefill, drawn from `p` like any other, so `target_forwards / generated` is 1 for plain
//! decoding and lower the more drafts are accepted.

pub mod accept;
pub mod lookup;
mod run;

use std::time::{Duration, Instant};

use sieve_core::{Candidates, Pipeline, SieveRng};

pub use accept::{acceptance, residual, verify, Distribution, Verdict};
pub use lookup::lookup;

use run::{Draft, Run, Selector};

use crate::batch::BatchModel;
use crate::generate::{GenerateOptions, Generation};
use crate::model::Detokenize;
use crate::stats::GenerationStats;
use crate::step::check_prompt;
use crate::Result;

/// Where draft tokens come from.
pub enum Drafter<'a> {
    /// A smaller model over the same vocabulary, with its own instance of the target's
    /// pipeline (the same stages, built separately so that their state is its own).
    Model {
        /// The draft model (a sequence is opened on it and closed at the end).
        model: &'a mut dyn BatchModel,
        /// The draft's pipeline.
        pipeline: &'a mut Pipeline,
    },
    /// Prompt lookup: drafts copied from the history (see [`lookup()`]), no second model.
    Lookup {
        /// The longest n-gram matched (transformers' `max_matching_ngram_size`, default 2).
        max_ngram: usize,
    },
}

impl std::fmt::Debug for Drafter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drafter::Model { pipeline, .. } => f
                .debug_struct("Model")
                .field("pipeline", pipeline)
                .finish_non_exhaustive(),
            Drafter::Lookup { max_ngram } => f
                .debug_struct("Lookup")
                .field("max_ngram", max_ngram)
                .finish(),
        }
    }
}

/// How to speculate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeculativeOptions {
    /// The most draft tokens per round (`K`; `--draft-tokens`, or `--lookup N`). 0 is plain
    /// decoding.
    pub draft_tokens: usize,
    /// The seed of every draw (see the [module](self) docs).
    pub seed: u64,
}

impl Default for SpeculativeOptions {
    /// Five draft tokens, seed 0.
    fn default() -> Self {
        SpeculativeOptions {
            draft_tokens: 5,
            seed: 0,
        }
    }
}

/// What speculation did in one generation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpeculativeStats {
    /// Draft tokens sent to the target for verification.
    pub drafted: usize,
    /// Draft tokens the target accepted (at most `drafted`; tokens after an EOS or a stop
    /// string in the middle of an accepted run are neither accepted nor rejected).
    pub accepted: usize,
    /// Target forward passes, the prefill included.
    pub target_forwards: usize,
    /// Draft-model forward passes (0 for prompt lookup).
    pub draft_forwards: usize,
    /// Tokens generated (as [`GenerationStats::generated_tokens`]).
    pub generated: usize,
    /// Time spent drafting: the draft model's forward passes and pipeline, or the lookup.
    pub draft_time: Duration,
}

impl SpeculativeStats {
    /// `accepted / drafted` (0 when nothing was drafted).
    pub fn acceptance_rate(&self) -> f64 {
        if self.drafted == 0 {
            0.0
        } else {
            self.accepted as f64 / self.drafted as f64
        }
    }

    /// `target_forwards / generated`: 1 for plain decoding, less the more drafts are
    /// accepted (0 when nothing was generated).
    pub fn target_forwards_per_token(&self) -> f64 {
        if self.generated == 0 {
            0.0
        } else {
            self.target_forwards as f64 / self.generated as f64
        }
    }
}

/// Generates text after `prompt` with speculative decoding (see the [module](self) docs):
/// `target` and `pipeline` decide the output, `drafter` only proposes. Opens a sequence on
/// `target` (and on a draft model) and closes it before returning. `pipeline` (and a draft
/// pipeline) is reset first, and accepts the prompt with
/// [`GenerateOptions::accept_prompt`], as in [`generate`](crate::generate()).
///
/// Returns the generation, as [`generate`](crate::generate()) reports it, and what
/// speculation did. In its [`GenerationStats`], `decode_forward_time` is the target's
/// verification passes and `sampling_time` the target pipeline's work; drafting (the draft
/// model's passes and pipeline, or the lookup) is [`SpeculativeStats::draft_time`].
///
/// # Errors
/// [`Error::SpeculativeSelector`](crate::Error::SpeculativeSelector) when a pipeline does not end in `greedy` or `dist`;
/// otherwise those of [`generate`](crate::generate()) ([`Error::EmptyPrompt`](crate::Error::EmptyPrompt),
/// [`Error::ContextOverflow`](crate::Error::ContextOverflow), [`Error::EmptyStop`](crate::Error::EmptyStop), [`Error::LogitsLength`](crate::Error::LogitsLength),
/// [`Error::ModelNan`](crate::Error::ModelNan), [`Error::Sampling`](crate::Error::Sampling), [`Error::Model`](crate::Error::Model), [`Error::Detokenize`](crate::Error::Detokenize)), for
/// either model.
#[allow(clippy::too_many_arguments)] // the arguments of `generate`, plus the drafter and K
pub fn generate_speculative(
    target: &mut dyn BatchModel,
    drafter: Drafter<'_>,
    detokenizer: &dyn Detokenize,
    pipeline: &mut Pipeline,
    prompt: &[u32],
    options: &GenerateOptions<'_>,
    speculative: &SpeculativeOptions,
    on_text: &mut dyn FnMut(&str),
) -> Result<(Generation, SpeculativeStats)> {
    let start = Instant::now();
    let context = target.context_len();
    check_prompt(prompt, 0, context)?;
    let selector = Selector::of(pipeline)?;
    let rules = options.end_rules(context)?;
    let mut draft = match drafter {
        Drafter::Model { model, pipeline } => {
            let selector = Selector::of(pipeline)?;
            let seq = model.open();
            Draft::Model {
                model,
                pipeline,
                selector,
                seq,
            }
        }
        Drafter::Lookup { max_ngram } => Draft::Lookup { max_ngram },
    };
    let seq = target.open();
    let mut run = Run {
        target,
        seq,
        pipeline,
        selector,
        detokenizer,
        prompt,
        options,
        rules: &rules,
        k: speculative.draft_tokens,
        rng: SieveRng::new(speculative.seed, "speculative"),
        candidates: Candidates::new(),
        stats: GenerationStats {
            prompt_tokens: prompt.len(),
            ..GenerationStats::default()
        },
        spec: SpeculativeStats::default(),
        steps: Vec::new(),
        sampling: Duration::ZERO,
        forward: Duration::ZERO,
    };
    let result = run.generate(&mut draft, on_text, start);
    run.target.close(seq);
    if let Draft::Model { model, seq, .. } = draft {
        model.close(seq);
    }
    result
}
