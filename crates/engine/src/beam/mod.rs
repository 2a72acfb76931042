//! Beam search with the semantics of transformers' `_beam_search` (transformers 5.23,
//! `generation/utils.py`): what `model.generate(num_beams=N, do_sample=False,
//! length_penalty=α, early_stopping=…, num_return_sequences=R, max_new_tokens=T,
//! eos_token_id=E)` returns, as `sequences` (best first) and `sequences_scores`.
//!
//! # Scores
//! - After a beam's history (the prompt, then its tokens) the model's logits row becomes
//!   log-probabilities in `f32`, `x − max − ln Σ e^(x − max)` (torch's `log_softmax`); then
//!   every stage of the pipeline but its selector ([`Pipeline::transform`]) runs on them, with
//!   that beam's history and stage state. transformers applies its logits processors
//!   (repetition penalty, no-repeat n-grams, biases, masks) to the log-softmaxed scores in the
//!   same way, so `penalty(repeat=r, last_n=L)` with `L` at least the sequence length is its
//!   `repetition_penalty=r` and `no_repeat_ngram(n)` its `no_repeat_ngram_size=n`. A stage
//!   that removes candidates (`top_k`, …) leaves them at `-inf`; with `do_sample=False`
//!   transformers runs no such warper.
//! - A beam's score is the sum of the processed log-probabilities of its tokens, added in
//!   `f32` in generation order, as torch keeps it.
//! - A finished hypothesis of `n` generated tokens (its EOS token counted, the prompt not)
//!   whose beam score is `s` scores `s / n^α`: `n^α` in `f64` (Python's `int ** float`),
//!   rounded to `f32`, and an `f32` division. This is transformers' `sequences_scores`. α > 0
//!   favours longer hypotheses, α < 0 shorter ones, α = 0 compares plain sums.
//!
//! # One step
//! With `K = max(2, 1 + |E|) · N` (`|E|` the number of distinct EOS ids), so that at least `N`
//! of the `K` best continuations do not end in an EOS token (a beam has one continuation per
//! EOS id):
//! 1. Every continuation `(beam, token)` with a finite processed log-probability is worth the
//!    beam's score plus it; the `K` best are ranked. Ties go to the lower beam index, then
//!    the lower token id (torch's `topk` leaves the order of ties unspecified).
//! 2. A continuation *ends* the hypothesis when its token is an EOS id, or when it makes `T`
//!    generated tokens (then every continuation ends).
//! 3. Ending continuations ranked among the first `N` become finished hypotheses; ending ones
//!    ranked below are dropped. The `N` best finished hypotheses are kept (a new one goes
//!    after older ones of the same score).
//! 4. The first `N` continuations that do not end are the next step's beams. All beams
//!    therefore always hold the same number of generated tokens.
//! 5. The search stops when no beam runs (the `T`-th token), or once `N` hypotheses are
//!    finished and
//!    - [`EarlyStopping::True`]: at once;
//!    - [`EarlyStopping::False`]: when the best running score divided by `n^α`, `n` the
//!      beams' current length, is not above the worst kept hypothesis' score
//!      (transformers' heuristic: beams whose score would only improve with more tokens, as
//!      with α > 0, are not waited for);
//!    - [`EarlyStopping::Never`]: the same with `n = T` when α > 0 (the best normalized
//!      score a beam could reach if its sum stopped falling), the current length otherwise.
//!      With α ≤ 0 and log-probabilities ≤ 0 no running beam can beat the worst kept
//!      hypothesis any more: the canonical beam search.
//! 6. The result is the `R` best finished hypotheses, best first, each with its tokens (EOS
//!    included), score and [`FinishReason`] (`Eos` or `Length`).
//!
//! `T` is [`BeamOptions::max_tokens`], capped, as [`generate()`](fn@crate::generate) caps
//! it, by the context: at most `context − prompt` tokens (at least one).
//!
//! # Differences from transformers
//! - transformers starts the first step with `N` copies of the prompt, all but the first at
//!   score `−1e9`; here the first step has one beam. The two agree whenever the first
//!   step has at least `K` finite continuations; with fewer (a mask leaving fewer than `K`
//!   tokens), transformers fills the rest with these `−1e9` copies and may return them, while
//!   here fewer continuations are ranked and fewer than `R` hypotheses may be returned. In the
//!   same way a beam whose stages mask every token has no continuation here (transformers
//!   gives it `-inf` ones that are never chosen while `K` finite ones exist).
//! - `N = 1`: transformers' `generate` runs greedy search instead. One-beam beam search
//!   chooses the same tokens as greedy search, except with [`EarlyStopping::Never`] and
//!   α > 0, where it may go on past a finished hypothesis to find a longer, better-normalized
//!   one.
//! - Ties between equal scores are ordered as described above (torch leaves them unordered).
//! - Stop strings do not apply; the caller may cut decoded texts.
//!
//! # The shared step
//! Beam search runs the [step](crate::step) every generation mode shares, with its scoring
//! middle: [`check_prompt`] before the prefill, then for every beam's row
//! [`Scorer::score`](crate::step::Scorer::score) (the row checks of [`check_row`](crate::check_row),
//! the [`log_softmax`], the stages but the selector) where the sampling modes call
//! [`Decoder::sample`](crate::Decoder::sample). What differs is what follows: the scores are
//! ranked over all beams instead of one token being chosen per sequence, and hypotheses end
//! on EOS or length without an [`Emitter`](crate::Emitter) (no text is streamed: a
//! hypothesis may be dropped at any step), their text decoded once, at the end.
//!
//! # Beams, the model and stage state
//! The prompt is prefilled once, in one sequence of the [`BatchModel`]. A beam continued by
//! one chosen continuation keeps its sequence; one continued by several is forked
//! ([`BatchModel::fork`]: the cache is copied, not recomputed); one continued by none is
//! closed. Each step feeds every beam's new token in a single [`BatchModel::step`].
//!
//! Each beam owns one of the `N` pipelines given (built alike). The first continuation of a
//! beam inherits its pipeline, which [`Pipeline::accept`]s the new token; any further
//! continuation takes the pipeline of a beam that was dropped (there is always one: `N`
//! continuations come from at most `N` beams), [`Pipeline::reset`]s it and replays the history into it
//! (the prompt when [`BeamOptions::accept_prompt`] is set, the parent's tokens, the new
//! token). A stage's state is a function of the tokens accepted since its reset, so every
//! beam's stages see exactly its own history, without building pipelines during the search.
//! The pipeline must end in `greedy` (or have no stage): a random selector is an
//! [`Error::BeamSelector`], since beam search chooses by score and never draws.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use sieve_core::{Pipeline, Vocab};

use crate::batch::BatchModel;
use crate::error::BeamOptionsError;
use crate::stats::{FinishReason, GenerationStats};
use crate::step::check_prompt;
use crate::{Error, Result};

mod search;

use search::Search;

/// The scoring step's log-softmax (it lives with the [step](crate::step) every mode shares).
pub use crate::step::log_softmax;

/// When beam search stops, once `N` hypotheses are finished (transformers' `early_stopping`;
/// see the [module](self) docs, step 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EarlyStopping {
    /// `early_stopping=True`: as soon as `N` hypotheses are finished.
    True,
    /// `early_stopping=False` (transformers' default): when the best running beam, at its
    /// current length, cannot beat the worst finished hypothesis.
    #[default]
    False,
    /// `early_stopping="never"`: when no running beam can beat the worst finished hypothesis
    /// even at the token limit (for α > 0).
    Never,
}

impl EarlyStopping {
    /// `true`, `false` or `never`.
    pub fn as_str(self) -> &'static str {
        match self {
            EarlyStopping::True => "true",
            EarlyStopping::False => "false",
            EarlyStopping::Never => "never",
        }
    }
}

impl fmt::Display for EarlyStopping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an [`EarlyStopping`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("early stopping is `true`, `false` or `never`, not `{0}`")]
pub struct ParseEarlyStoppingError(pub String);

impl FromStr for EarlyStopping {
    type Err = ParseEarlyStoppingError;

    /// Reads `true`, `false` or `never` (ASCII case ignored).
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "true" => Ok(EarlyStopping::True),
            "false" => Ok(EarlyStopping::False),
            "never" => Ok(EarlyStopping::Never),
            _ => Err(ParseEarlyStoppingError(s.to_string())),
        }
    }
}

/// What [`beam_search`] searches for.
#[derive(Debug, Clone)]
pub struct BeamOptions<'a> {
    /// `N`, the number of beams (at least 1; one pipeline each).
    pub beams: usize,
    /// α: a finished hypothesis of `n` generated tokens scores `sum / n^α`.
    pub length_penalty: f64,
    /// When to stop once `beams` hypotheses are finished.
    pub early_stopping: EarlyStopping,
    /// `R`, how many hypotheses to return (1 to `beams`).
    pub num_return: usize,
    /// `T`, the most tokens to generate (an EOS token counts); at least 1.
    pub max_tokens: usize,
    /// End-of-sequence ids: a continuation with one of them finishes its hypothesis.
    pub eos: Vec<u32>,
    /// The vocabulary, passed to the stages in their [`Context`](sieve_core::Context).
    pub vocab: Option<&'a Vocab>,
    /// Whether every prompt token is passed to [`Pipeline::accept`] before the first step
    /// (as [`GenerateOptions::accept_prompt`](crate::GenerateOptions::accept_prompt)).
    pub accept_prompt: bool,
    /// When set, the search stops before the next forward pass and returns the best of the
    /// finished hypotheses and the running beams (these with [`FinishReason::Cancelled`]).
    pub cancel: Option<&'a AtomicBool>,
}

impl BeamOptions<'_> {
    /// `beams` beams with transformers' defaults for the rest: length penalty 1,
    /// `early_stopping=False`, one sequence returned; no token limit but the context, no EOS
    /// id, no vocabulary, the prompt accepted.
    pub fn new(beams: usize) -> Self {
        BeamOptions {
            beams,
            length_penalty: 1.0,
            early_stopping: EarlyStopping::False,
            num_return: 1,
            max_tokens: usize::MAX,
            eos: Vec::new(),
            vocab: None,
            accept_prompt: true,
            cancel: None,
        }
    }

    /// Checks the options against `pipelines` pipelines.
    fn check(&self, pipelines: usize) -> Result<()> {
        let error = if self.beams == 0 {
            BeamOptionsError::NoBeams
        } else if self.num_return == 0 || self.num_return > self.beams {
            BeamOptionsError::NumReturn {
                num_return: self.num_return,
                beams: self.beams,
            }
        } else if self.max_tokens == 0 {
            BeamOptionsError::NoTokens
        } else if pipelines != self.beams {
            BeamOptionsError::Pipelines {
                pipelines,
                beams: self.beams,
            }
        } else {
            return Ok(());
        };
        Err(Error::BeamOptions(error))
    }
}

impl Default for BeamOptions<'_> {
    /// [`BeamOptions::new`] with 4 beams.
    fn default() -> Self {
        BeamOptions::new(4)
    }
}

/// One finished hypothesis.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    /// The generated tokens (the EOS token included).
    pub tokens: Vec<u32>,
    /// `sum of processed log-probabilities / len^α` (computed in `f32`): transformers'
    /// `sequences_scores`.
    pub score: f64,
    /// [`FinishReason::Eos`], [`FinishReason::Length`], or [`FinishReason::Cancelled`] for a
    /// beam still running when the search was cancelled.
    pub finish: FinishReason,
}

/// The result of [`beam_search`].
#[derive(Debug, Clone, PartialEq)]
pub struct BeamSearch {
    /// At most [`BeamOptions::num_return`] hypotheses, best first (fewer only when fewer
    /// continuations exist, see the [module](self) docs).
    pub hypotheses: Vec<Hypothesis>,
    /// Timings: `generated_tokens` counts search steps (the longest hypothesis' length),
    /// `sampling_time` the log-softmax, stages and ranking of every beam, and
    /// `decode_forward_time` the batched forward passes after the prefill.
    pub stats: GenerationStats,
}

/// Searches the `beams` best continuations of `prompt` (see the [module](self) docs for the
/// exact rules), with `pipelines[i]` the stages of one beam (one per beam, built alike, each
/// ending in `greedy` or empty). Every sequence the search opens in `model` is closed before
/// it returns, error or not.
///
/// # Errors
/// [`Error::BeamOptions`] and [`Error::BeamSelector`] before anything runs;
/// [`Error::EmptyPrompt`], [`Error::ContextOverflow`] (the prompt does not fit),
/// [`Error::LogitsLength`], [`Error::ModelNan`], [`Error::Sampling`] (a stage failed, or
/// every beam's stages masked every token before a hypothesis finished) and the model's
/// errors.
pub fn beam_search(
    model: &mut dyn BatchModel,
    pipelines: Vec<Pipeline>,
    prompt: &[u32],
    options: &BeamOptions<'_>,
) -> Result<BeamSearch> {
    let start = Instant::now();
    options.check(pipelines.len())?;
    if let Some(selector) = pipelines
        .iter()
        .filter_map(Pipeline::selector)
        .find(|&s| s != "greedy")
    {
        return Err(Error::BeamSelector {
            selector: selector.to_string(),
        });
    }
    let context = model.context_len();
    check_prompt(prompt, 0, context)?;
    let mut search = Search::new(options, prompt, pipelines, context, model.vocab_size());
    let result = search.run(model, start);
    search.close(model);
    result?;
    Ok(search.into_result(start))
}
