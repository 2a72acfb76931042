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
//! Of the [step](crate::step) every generation mode shares, beam search uses the prompt check
//! ([`check_prompt`]) and the row checks ([`check_row`]: length, NaN); it does not sample one
//! token per sequence (it scores every continuation, as above) and ends hypotheses on EOS or
//! length without an [`Emitter`](crate::Emitter): their text is decoded once, at the end.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sieve_core::{math, Candidates, Context, Pipeline, Vocab};

use crate::batch::{BatchModel, Feed, SeqId};
use crate::error::BeamOptionsError;
use crate::stats::{FinishReason, GenerationStats};
use crate::step::{check_prompt, check_row};
use crate::{Error, Result};

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
    /// The vocabulary, passed to the stages in their [`Context`].
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
    let mut eos = options.eos.clone();
    eos.sort_unstable();
    eos.dedup();
    let mut search = Search {
        options,
        prompt,
        limit: options.max_tokens.min((context - prompt.len()).max(1)),
        k: (1 + eos.len()).max(2) * options.beams,
        eos,
        vocab_size: model.vocab_size(),
        pipelines,
        free: Vec::new(),
        running: Vec::new(),
        finished: Vec::new(),
        open: Vec::new(),
        candidates: Candidates::new(),
        history: Vec::new(),
        exp: Vec::new(),
        dead: None,
        stats: GenerationStats {
            prompt_tokens: prompt.len(),
            ..Default::default()
        },
    };
    let result = search.run(model, start);
    for seq in search.open.drain(..) {
        model.close(seq);
    }
    result?;
    let mut stats = search.stats;
    stats.total_time = start.elapsed();
    let hypotheses = search
        .finished
        .into_iter()
        .take(options.num_return)
        .map(|f| Hypothesis {
            tokens: f.tokens,
            score: f64::from(f.score),
            finish: f.finish,
        })
        .collect();
    Ok(BeamSearch { hypotheses, stats })
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

/// A running beam.
#[derive(Debug)]
struct Beam {
    /// Its sequence in the model: the prompt and its tokens (the last one once fed).
    seq: SeqId,
    /// The generated tokens.
    tokens: Vec<u32>,
    /// The sum of its processed log-probabilities.
    score: f32,
    /// Its pipeline's index.
    pipe: usize,
}

/// One continuation `(beam, token)` of a step.
#[derive(Debug, Clone, Copy)]
struct Continuation {
    beam: usize,
    token: u32,
    /// The beam's score plus the token's processed log-probability.
    total: f32,
}

/// A finished hypothesis.
#[derive(Debug)]
struct Finished {
    tokens: Vec<u32>,
    score: f32,
    finish: FinishReason,
}

/// The state of one search.
struct Search<'o> {
    options: &'o BeamOptions<'o>,
    prompt: &'o [u32],
    /// `T`, after the context cap.
    limit: usize,
    /// `K`, how many continuations are ranked per step.
    k: usize,
    /// The distinct EOS ids.
    eos: Vec<u32>,
    vocab_size: usize,
    pipelines: Vec<Pipeline>,
    /// Pipelines of no running beam.
    free: Vec<usize>,
    running: Vec<Beam>,
    /// At most `N` hypotheses, best first.
    finished: Vec<Finished>,
    /// Every sequence opened in the model and not yet closed.
    open: Vec<SeqId>,
    candidates: Candidates,
    history: Vec<u32>,
    /// Scratch for the log-softmax.
    exp: Vec<f32>,
    /// The last "no finite candidate" error of a beam, reported if every beam dies.
    dead: Option<sieve_core::Error>,
    stats: GenerationStats,
}

impl Search<'_> {
    fn run(&mut self, model: &mut dyn BatchModel, start: Instant) -> Result<()> {
        let beams = self.options.beams;
        for p in &mut self.pipelines {
            p.reset();
        }
        if self.options.accept_prompt {
            for &t in self.prompt {
                self.pipelines[0].accept(t);
            }
        }
        self.free = (1..beams).rev().collect();
        let root = model.open();
        self.open.push(root);
        self.running.push(Beam {
            seq: root,
            tokens: Vec::new(),
            score: 0.0,
            pipe: 0,
        });
        let t = Instant::now();
        let mut rows = model.step(&[Feed::last(root, self.prompt)])?;
        self.stats.prefill_time = t.elapsed();

        let mut sampling = Duration::ZERO;
        let mut forward = Duration::ZERO;
        let mut first_at: Option<Instant> = None;
        for len in 1.. {
            let t = Instant::now();
            let scored = self.score(rows, len - 1)?;
            let ranked = self.rank(&scored);
            let at_limit = len >= self.limit;
            let ends = |c: &Continuation| at_limit || self.eos.binary_search(&c.token).is_ok();
            let finishing: Vec<Continuation> = ranked
                .iter()
                .take(beams)
                .filter(|c| ends(c))
                .copied()
                .collect();
            let next: Vec<Continuation> = ranked
                .iter()
                .filter(|c| !ends(c))
                .take(beams)
                .copied()
                .collect();
            for c in finishing {
                let reason = if at_limit && self.eos.binary_search(&c.token).is_err() {
                    FinishReason::Length
                } else {
                    FinishReason::Eos
                };
                self.keep(self.hypothesis(&c, len, reason));
            }
            sampling += t.elapsed();
            let now = Instant::now();
            let first = *first_at.get_or_insert_with(|| {
                self.stats.time_to_first_token = now - start;
                now
            });
            self.stats.decode_time = now - first;
            self.stats.generated_tokens = len;
            self.stats.sampling_time = sampling;
            self.stats.decode_forward_time = forward;

            if next.is_empty() {
                if self.finished.is_empty() {
                    if let Some(e) = self.dead.take() {
                        return Err(Error::Sampling(e));
                    }
                }
                return Ok(());
            }
            if self.done(next[0].total, len) {
                return Ok(());
            }
            if self
                .options
                .cancel
                .is_some_and(|flag| flag.load(Ordering::Relaxed))
            {
                for c in &next {
                    let h = self.hypothesis(c, len, FinishReason::Cancelled);
                    self.keep(h);
                }
                return Ok(());
            }
            self.advance(model, &next)?;
            let feeds: Vec<Feed<'_>> = self
                .running
                .iter()
                .map(|b| Feed::last(b.seq, &b.tokens[b.tokens.len() - 1..]))
                .collect();
            let t = Instant::now();
            rows = model.step(&feeds)?;
            forward += t.elapsed();
            if rows.len() != feeds.len() {
                let message = format!("{} logits rows for {} feeds", rows.len(), feeds.len());
                return Err(Error::Model(message.into()));
            }
        }
        Ok(())
    }

    /// Each running beam's processed log-probabilities (`None`: its stages left nothing).
    fn score(&mut self, rows: Vec<Vec<f32>>, step: usize) -> Result<Vec<Option<Vec<f32>>>> {
        let mut out = Vec::with_capacity(rows.len());
        for (beam, mut row) in self.running.iter().zip(rows) {
            // The step's row checks (length, NaN: the model's fault); then `+inf` is read as
            // `f32::MAX`, as candidates read it.
            check_row(&row, self.vocab_size, step)?;
            for x in &mut row {
                *x = math::sanitize(*x);
            }
            log_softmax(&mut row, &mut self.exp);
            self.candidates.load_owned(row);
            self.history.clear();
            self.history.extend_from_slice(self.prompt);
            self.history.extend_from_slice(&beam.tokens);
            let cx = Context {
                history: &self.history,
                prompt_len: self.prompt.len(),
                vocab: self.options.vocab,
                step,
            };
            match self.pipelines[beam.pipe].transform(&mut self.candidates, &cx) {
                Ok(()) => out.push(Some(dense(&mut self.candidates, self.vocab_size))),
                Err(e @ sieve_core::Error::NoFiniteCandidates { .. }) => {
                    self.dead = Some(e);
                    out.push(None);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    /// The `K` best continuations over every beam, best first.
    ///
    /// The kept set is cut back to the `K` best whenever it reaches `4K` (at least 256);
    /// then a continuation below the worst kept one (`floor`) cannot be among the `K` best
    /// and is skipped, so a large vocabulary costs one comparison per token.
    fn rank(&self, scored: &[Option<Vec<f32>>]) -> Vec<Continuation> {
        let order = |a: &Continuation, b: &Continuation| {
            b.total
                .total_cmp(&a.total)
                .then(a.beam.cmp(&b.beam))
                .then(a.token.cmp(&b.token))
        };
        let k = self.k;
        let cut = |all: &mut Vec<Continuation>| {
            if all.len() > k {
                all.select_nth_unstable_by(k - 1, order);
                all.truncate(k);
            }
        };
        let mut all = Vec::new();
        let mut floor = f32::NEG_INFINITY;
        for (beam, (b, row)) in self.running.iter().zip(scored).enumerate() {
            let Some(row) = row else { continue };
            for (token, &x) in row.iter().enumerate() {
                let total = b.score + x;
                // Ties with the floor are kept: their order is decided by beam and token.
                if total > f32::NEG_INFINITY && total >= floor {
                    all.push(Continuation {
                        beam,
                        token: token as u32,
                        total,
                    });
                    if all.len() >= (4 * k).max(256) {
                        cut(&mut all);
                        floor = all.iter().map(|c| c.total).fold(f32::INFINITY, f32::min);
                    }
                }
            }
        }
        cut(&mut all);
        all.sort_unstable_by(order);
        all
    }

    /// The hypothesis `c` makes, `len` tokens long.
    fn hypothesis(&self, c: &Continuation, len: usize, finish: FinishReason) -> Finished {
        let mut tokens = Vec::with_capacity(len);
        tokens.extend_from_slice(&self.running[c.beam].tokens);
        tokens.push(c.token);
        Finished {
            tokens,
            score: c.total / self.penalty(len),
            finish,
        }
    }

    /// `len^α`, as transformers computes it (`f64`, then `f32`).
    fn penalty(&self, len: usize) -> f32 {
        (len as f64).powf(self.options.length_penalty) as f32
    }

    /// Keeps `h` if it is among the `N` best (after older ones of its score).
    fn keep(&mut self, h: Finished) {
        let at = self.finished.partition_point(|f| f.score >= h.score);
        if at < self.options.beams {
            self.finished.insert(at, h);
            self.finished.truncate(self.options.beams);
        }
    }

    /// Whether the search stops, the best running beam having score `best` after `len`
    /// tokens (step 5 of the module docs).
    fn done(&self, best: f32, len: usize) -> bool {
        let Some(worst) = self.finished.last() else {
            return false;
        };
        if self.finished.len() < self.options.beams {
            return false;
        }
        let hypothetical = match self.options.early_stopping {
            EarlyStopping::True => return true,
            EarlyStopping::Never if self.options.length_penalty > 0.0 => self.limit,
            _ => len,
        };
        // transformers goes on while the best beam's bound is strictly above the worst.
        let improvable = best / self.penalty(hypothetical) > worst.score;
        !improvable
    }

    /// Makes `next` the running beams: forks beams continued more than once, closes those
    /// not continued, hands each new beam a pipeline that has accepted its history.
    fn advance(&mut self, model: &mut dyn BatchModel, next: &[Continuation]) -> Result<()> {
        let mut continued = vec![false; self.running.len()];
        for c in next {
            continued[c.beam] = true;
        }
        for (b, _) in self.running.iter().zip(&continued).filter(|(_, &c)| !c) {
            model.close(b.seq);
            self.open.retain(|&s| s != b.seq);
            self.free.push(b.pipe);
        }
        let mut inherited = vec![false; self.running.len()];
        let mut beams = Vec::with_capacity(next.len());
        for c in next {
            let parent = &self.running[c.beam];
            let mut tokens = Vec::with_capacity(parent.tokens.len() + 1);
            tokens.extend_from_slice(&parent.tokens);
            tokens.push(c.token);
            let (seq, pipe) = if !inherited[c.beam] {
                inherited[c.beam] = true;
                self.pipelines[parent.pipe].accept(c.token);
                (parent.seq, parent.pipe)
            } else {
                let seq = model.fork(parent.seq)?;
                self.open.push(seq);
                // `N` continuations come from at most `N` beams, so every extra continuation of
                // a beam matches a beam that was dropped and freed its pipeline.
                let pipe = self.free.pop().unwrap_or_else(|| unreachable!());
                let p = &mut self.pipelines[pipe];
                p.reset();
                if self.options.accept_prompt {
                    for &t in self.prompt {
                        p.accept(t);
                    }
                }
                for &t in &tokens {
                    p.accept(t);
                }
                (seq, pipe)
            };
            beams.push(Beam {
                seq,
                tokens,
                score: c.total,
                pipe,
            });
        }
        self.running = beams;
        Ok(())
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
