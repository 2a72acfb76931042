//! One decode step, written once for every generation mode: check the prompt, load a row of
//! logits into [`Candidates`] (length and NaN checks), run the pipeline, accept the chosen
//! token, and push it through the sequence's [`Emitter`] (EOS, stop strings, token limit,
//! streamed text).
//!
//! | part | [`generate()`](fn@crate::generate) | [`generate_parallel`](crate::generate_parallel) | scheduler | speculative | beam search |
//! |---|---|---|---|---|---|
//! | [`check_prompt`] | ✓ | ✓ | ✓ (submit and start) | ✓ | ✓ |
//! | [`check_row`] / [`load_row`] | via [`Decoder`] | via [`Decoder`] | via [`Decoder`] | [`Decoder::load`] (target), [`load_row`] (draft) | via [`Scorer`] |
//! | [`Decoder::sample`] (pipeline, accept) | ✓ | ✓ | ✓ | — (the selector's distribution) | [`Scorer::score`] (every token's score) |
//! | [`Decoder::emit`] / [`Decoder::finish`] | ✓ | ✓ | ✓ | ✓ | — |
//!
//! Two modes do differently what the step's middle does:
//! - **speculative decoding** loads the target's rows with [`Decoder::load`] and the draft
//!   model's with [`load_row`] (it may have another vocabulary; the context of a draft
//!   includes the drafts before it), then asks the selector for its *distribution* instead
//!   of one token and accepts or rejects drafts against it; the tokens it keeps go through
//!   [`Decoder::emit`] as in every other mode;
//! - **beam search** scores every continuation rather than sampling one token: each row goes
//!   through [`Scorer::score`] ([`check_row`], [`log_softmax`], the stages but the selector)
//!   and the scores are ranked over all beams; hypotheses end on EOS or length, and their
//!   text is decoded once at the end (a hypothesis may be dropped at any step, so nothing is
//!   streamed through an [`Emitter`]).

use sieve_core::{math, Candidates, Context, Pipeline, Vocab};

use crate::emit::{Emitter, EndRules};
use crate::model::Detokenize;
use crate::stats::FinishReason;
use crate::{Error, Result};

/// The check every generation mode and front end makes before feeding `tokens` to a model of
/// `context` positions that already holds (or must still make room for) `extra` others.
///
/// Plain prompts pass `extra = 0`; a model appending to a cache passes the positions it
/// holds; a benchmark passes the decode steps it will run.
///
/// # Errors
/// [`Error::EmptyPrompt`] for no token, [`Error::ContextOverflow`] (with the total) when
/// `extra + tokens.len()` exceeds `context`.
pub fn check_prompt(tokens: &[u32], extra: usize, context: usize) -> Result<()> {
    if tokens.is_empty() {
        return Err(Error::EmptyPrompt);
    }
    let total = extra.saturating_add(tokens.len());
    if total > context {
        return Err(Error::ContextOverflow {
            tokens: total,
            context,
        });
    }
    Ok(())
}

/// [`Error::LogitsLength`] unless `row` has `vocab` values, [`Error::ModelNan`] (at
/// generation step `step`) if any is NaN: the checks [`load_row`] makes, for a mode that
/// transforms the row before loading it (beam search).
///
/// # Errors
/// As said.
pub fn check_row(row: &[f32], vocab: usize, step: usize) -> Result<()> {
    check_len(row, vocab)?;
    let nan = row.iter().filter(|x| x.is_nan()).count();
    if nan > 0 {
        return Err(nan_error(step, nan, vocab));
    }
    Ok(())
}

/// Loads `row` into `candidates` after checking it as [`check_row`] does. One vectorized read
/// loads and counts NaN; only a row that has some is reported.
///
/// # Errors
/// [`Error::LogitsLength`], [`Error::ModelNan`].
pub fn load_row(
    candidates: &mut Candidates,
    row: Vec<f32>,
    vocab: usize,
    step: usize,
) -> Result<()> {
    check_len(&row, vocab)?;
    let nan = candidates.load_owned(row);
    if nan > 0 {
        return Err(nan_error(step, nan, vocab));
    }
    Ok(())
}

fn check_len(row: &[f32], vocab: usize) -> Result<()> {
    if row.len() != vocab {
        return Err(Error::LogitsLength {
            expected: vocab,
            found: row.len(),
        });
    }
    Ok(())
}

fn nan_error(step: usize, count: usize, vocab: usize) -> Error {
    Error::ModelNan { step, count, vocab }
}

/// The token a [`Decoder::sample`] chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    /// The token (already passed to [`Pipeline::accept`]).
    pub token: u32,
    /// The row as the model returned it, when asked for (statistics, raw log-probabilities).
    pub raw: Option<Vec<f32>>,
}

/// One sequence while it decodes: its candidates buffer and its [`Emitter`]. Each step is
/// [`Decoder::sample`] (load the row, run the pipeline, accept) then [`Decoder::emit`] (EOS,
/// stop strings, limits, text); [`Decoder::finish`] ends it. The pipeline is passed in, so a
/// caller may own it or borrow it.
#[derive(Debug)]
pub struct Decoder<'f> {
    candidates: Candidates,
    out: Emitter<'f>,
    vocab_size: usize,
}

impl<'f> Decoder<'f> {
    /// A decoder after `prompt` for a model of `vocab_size` logits, streaming through
    /// `on_text`.
    ///
    /// # Errors
    /// What `detokenizer` returns on the prompt.
    pub fn new(
        detokenizer: &dyn Detokenize,
        prompt: &[u32],
        vocab_size: usize,
        on_text: &'f mut dyn FnMut(&str),
    ) -> Result<Self> {
        Ok(Decoder {
            candidates: Candidates::new(),
            out: Emitter::new(detokenizer, prompt, on_text)?,
            vocab_size,
        })
    }

    /// The sequence's emitter (history, generated tokens, text so far).
    pub fn emitter(&self) -> &Emitter<'f> {
        &self.out
    }

    /// The candidates as the last [`Decoder::sample`] left them.
    pub fn candidates(&self) -> &Candidates {
        &self.candidates
    }

    /// Loads `row` ([`load_row`], `step` naming the generation step in a NaN report) and
    /// hands the candidates out, for a mode that asks the pipeline for more than one token
    /// (speculative decoding: its selector's distribution).
    ///
    /// # Errors
    /// [`Error::LogitsLength`], [`Error::ModelNan`].
    pub fn load(&mut self, row: Vec<f32>, step: usize) -> Result<&mut Candidates> {
        load_row(&mut self.candidates, row, self.vocab_size, step)?;
        Ok(&mut self.candidates)
    }

    /// Loads `row` ([`load_row`]), runs `pipeline` on it with a [`Context`] of this
    /// sequence's history and `vocab`, and accepts the chosen token. `keep_raw`: return a
    /// copy of the row as given.
    ///
    /// # Errors
    /// [`Error::LogitsLength`], [`Error::ModelNan`], [`Error::Sampling`].
    pub fn sample(
        &mut self,
        pipeline: &mut Pipeline,
        row: Vec<f32>,
        vocab: Option<&Vocab>,
        keep_raw: bool,
    ) -> Result<Sampled> {
        let raw = keep_raw.then(|| row.clone());
        let step = self.out.generated().len();
        load_row(&mut self.candidates, row, self.vocab_size, step)?;
        let cx = Context {
            history: self.out.history(),
            prompt_len: self.out.prompt_len(),
            vocab,
            step,
        };
        let token = pipeline.sample(&mut self.candidates, &cx)?;
        pipeline.accept(token);
        Ok(Sampled { token, raw })
    }

    /// Pushes `token` through the emitter ([`Emitter::push`]): why the sequence ends with
    /// it, if it does.
    ///
    /// # Errors
    /// What the detokenizer returns.
    pub fn emit(
        &mut self,
        detokenizer: &dyn Detokenize,
        token: u32,
        rules: &EndRules,
    ) -> Result<Option<FinishReason>> {
        self.out.push(detokenizer, token, rules)
    }

    /// Ends the sequence ([`Emitter::finish`]): the text, the generated tokens and the final
    /// reason.
    ///
    /// # Errors
    /// What the detokenizer returns.
    pub fn finish(
        self,
        detokenizer: &dyn Detokenize,
        finish: FinishReason,
        rules: &EndRules,
    ) -> Result<(String, Vec<u32>, FinishReason)> {
        self.out.finish(detokenizer, finish, rules)
    }
}

/// The scoring step of beam search: where [`Decoder::sample`] picks one token, a [`Scorer`]
/// turns a beam's row into the processed log-probability of *every* token.
///
/// [`Scorer::score`] checks the row ([`check_row`]: length, NaN), reads `+inf` as `f32::MAX`
/// (as [`Candidates`] reads it), takes the [`log_softmax`], and runs every stage of the
/// pipeline but its selector ([`Pipeline::transform`]) with the beam's [`Context`]; a token a
/// stage removed scores `-inf`.
#[derive(Debug, Default)]
pub struct Scorer {
    candidates: Candidates,
    /// Scratch for the log-softmax.
    exp: Vec<f32>,
    /// The last "no finite candidate" error, for when every beam ends that way.
    dead: Option<sieve_core::Error>,
}

impl Scorer {
    /// A scorer with empty buffers.
    pub fn new() -> Self {
        Scorer::default()
    }

    /// The processed log-probabilities of every token of `vocab_size` after `cx`'s history,
    /// or `None` when `pipeline`'s stages removed every token (the error is kept for
    /// [`Scorer::take_dead`]).
    ///
    /// # Errors
    /// [`Error::LogitsLength`], [`Error::ModelNan`] (at step `cx.step`), and a stage's other
    /// errors as [`Error::Sampling`].
    pub fn score(
        &mut self,
        pipeline: &mut Pipeline,
        mut row: Vec<f32>,
        vocab_size: usize,
        cx: &Context<'_>,
    ) -> Result<Option<Vec<f32>>> {
        check_row(&row, vocab_size, cx.step)?;
        for x in &mut row {
            *x = math::sanitize(*x);
        }
        log_softmax(&mut row, &mut self.exp);
        self.candidates.load_owned(row);
        match pipeline.transform(&mut self.candidates, cx) {
            Ok(()) => Ok(Some(dense(&mut self.candidates, vocab_size))),
            Err(e @ sieve_core::Error::NoFiniteCandidates { .. }) => {
                self.dead = Some(e);
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The last error of a row whose stages removed every token, if any (taken).
    pub fn take_dead(&mut self) -> Option<sieve_core::Error> {
        self.dead.take()
    }
}

/// Log-probabilities of a logits row as beam search scores them: in `f32`,
/// `x − max − ln Σ e^(x − max)` (the sum accumulated in `f64` blocks), as torch's
/// `log_softmax`. `-inf` logits stay `-inf`; `scratch` is reused between calls.
pub fn log_softmax(logits: &mut [f32], scratch: &mut Vec<f32>) {
    let max = math::max(logits);
    if max == f32::NEG_INFINITY {
        return;
    }
    scratch.resize(logits.len(), 0.0);
    let sum = math::exp_shifted_into(logits, max, 1.0, scratch);
    let lse = sum.ln() as f32;
    for x in logits {
        *x = (*x - max) - lse;
    }
}

/// The candidates' logits as a full row (`-inf` for a token that is no longer a candidate).
fn dense(c: &mut Candidates, vocab: usize) -> Vec<f32> {
    if c.is_dense() && c.len() == vocab {
        c.logits();
        return c.take_logits();
    }
    let mut row = vec![f32::NEG_INFINITY; vocab];
    for (id, logit) in c.iter() {
        if let Some(x) = row.get_mut(id as usize) {
            *x = logit;
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_check() {
        assert!(matches!(check_prompt(&[], 0, 4), Err(Error::EmptyPrompt)));
        assert!(check_prompt(&[1; 4], 0, 4).is_ok());
        assert!(matches!(
            check_prompt(&[1; 2], 3, 4),
            Err(Error::ContextOverflow {
                tokens: 5,
                context: 4
            })
        ));
    }

    #[test]
    fn rows_are_checked() {
        let mut c = Candidates::new();
        assert!(matches!(
            load_row(&mut c, vec![0.0; 3], 4, 0),
            Err(Error::LogitsLength {
                expected: 4,
                found: 3
            })
        ));
        let row = vec![0.0, f32::NAN, 1.0, f32::NAN];
        assert!(matches!(
            check_row(&row, 4, 2),
            Err(Error::ModelNan {
                step: 2,
                count: 2,
                vocab: 4
            })
        ));
        assert!(matches!(
            load_row(&mut c, row, 4, 2),
            Err(Error::ModelNan { count: 2, .. })
        ));
        assert!(load_row(&mut c, vec![0.0; 4], 4, 0).is_ok());
    }
}
