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
//! 2. **Verify** with one target step feeding `[t, x_1 … x_K]` ([`Feed::all`]): row `i`
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
//!   it exposes, so draft tokens cannot be accepted exactly: [`Error::SpeculativeSelector`].
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
//! of an accepted run, through the same [`Decoder`] (the [step](crate::step)) as plain
//! decoding. Cancellation is checked before every round. The first token comes from the
//! prefill, drawn from `p` like any other, so `target_forwards / generated` is 1 for plain
//! decoding and lower the more drafts are accepted.

pub mod accept;
pub mod lookup;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sieve_core::{Candidates, Context, Pipeline, SieveRng};

pub use accept::{acceptance, residual, verify, Distribution, Verdict};
pub use lookup::lookup;

use crate::batch::{BatchModel, Feed, SeqId};
use crate::emit::EndRules;
use crate::generate::{GenerateOptions, Generation};
use crate::model::Detokenize;
use crate::stats::{FinishReason, GenerationStats};
use crate::step::{check_prompt, load_row, Decoder};
use crate::step_stats::StepStats;
use crate::{Error, Result};

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

/// Which distribution a pipeline's selector draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Selector {
    /// The point mass on the argmax.
    Greedy,
    /// The softmax of the survivors.
    Dist,
}

impl Selector {
    /// The selector of `pipeline`.
    ///
    /// # Errors
    /// [`Error::SpeculativeSelector`] for anything but `greedy` and `dist`.
    fn of(pipeline: &Pipeline) -> Result<Self> {
        match pipeline.selector() {
            Some("greedy") => Ok(Selector::Greedy),
            Some("dist") => Ok(Selector::Dist),
            other => Err(Error::SpeculativeSelector {
                selector: other.unwrap_or("(no stage)").to_string(),
            }),
        }
    }

    /// The distribution `pipeline` draws from on `candidates` in `cx`, over `vocab` ids.
    fn distribution(
        self,
        pipeline: &mut Pipeline,
        candidates: &mut Candidates,
        cx: &Context<'_>,
        vocab: usize,
    ) -> Result<Distribution> {
        Ok(match self {
            Selector::Greedy => Distribution::Point(pipeline.sample(candidates, cx)?),
            Selector::Dist => {
                pipeline.transform(candidates, cx)?;
                Distribution::of_candidates(candidates, vocab)
            }
        })
    }
}

/// A draw from a distribution that has mass (the pipeline left a finite candidate, so it
/// has).
fn draw(d: &Distribution, rng: &mut SieveRng, pipeline: &Pipeline) -> Result<u32> {
    d.draw(rng).ok_or_else(|| {
        Error::Sampling(sieve_core::Error::NoFiniteCandidates {
            stage: pipeline.selector().unwrap_or("(no stage)").to_string(),
        })
    })
}

/// The draft side during a generation.
enum Draft<'a> {
    Model {
        model: &'a mut dyn BatchModel,
        pipeline: &'a mut Pipeline,
        selector: Selector,
        seq: SeqId,
    },
    Lookup {
        max_ngram: usize,
    },
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
/// [`Error::SpeculativeSelector`] when a pipeline does not end in `greedy` or `dist`;
/// otherwise those of [`generate`](crate::generate()) ([`Error::EmptyPrompt`],
/// [`Error::ContextOverflow`], [`Error::EmptyStop`], [`Error::LogitsLength`],
/// [`Error::ModelNan`], [`Error::Sampling`], [`Error::Model`], [`Error::Detokenize`]), for
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

/// The state of one speculative generation.
struct Run<'r, 'o> {
    target: &'r mut dyn BatchModel,
    seq: SeqId,
    pipeline: &'r mut Pipeline,
    selector: Selector,
    detokenizer: &'r dyn Detokenize,
    prompt: &'r [u32],
    options: &'r GenerateOptions<'o>,
    rules: &'r EndRules,
    k: usize,
    rng: SieveRng,
    candidates: Candidates,
    stats: GenerationStats,
    spec: SpeculativeStats,
    steps: Vec<StepStats>,
    sampling: Duration,
    forward: Duration,
}

impl Run<'_, '_> {
    fn generate(
        &mut self,
        draft: &mut Draft<'_>,
        on_text: &mut dyn FnMut(&str),
        start: Instant,
    ) -> Result<(Generation, SpeculativeStats)> {
        reset_pipeline(self.pipeline, self.prompt, &[], self.options.accept_prompt);
        if let Draft::Model { pipeline, .. } = draft {
            reset_pipeline(pipeline, self.prompt, &[], self.options.accept_prompt);
        }
        if self.options.max_tokens == 0 {
            self.stats.total_time = start.elapsed();
            let generation = Generation {
                text: String::new(),
                tokens: Vec::new(),
                finish: FinishReason::Length,
                stats: self.stats,
                steps: Vec::new(),
            };
            return Ok((generation, self.spec));
        }
        let mut out = Decoder::new(
            self.detokenizer,
            self.prompt,
            self.target.vocab_size(),
            on_text,
        )?;

        let t = Instant::now();
        let rows = self.target.step(&[Feed::last(self.seq, self.prompt)])?;
        self.stats.prefill_time = t.elapsed();
        self.spec.target_forwards += 1;
        let mut first_at = None;
        let cancelled = || {
            self.options
                .cancel
                .is_some_and(|flag| flag.load(Ordering::Relaxed))
        };
        // The first token: the prefill's row, with no draft.
        let finish = if cancelled() {
            FinishReason::Cancelled
        } else {
            match self.emit_verified(&mut out, &rows, &[], &[], start, &mut first_at)? {
                Some(finish) => finish,
                None => loop {
                    if let Draft::Model { pipeline, .. } = draft {
                        // The draft pipeline has seen every token but the last one emitted.
                        pipeline.accept(*out.emitter().history().last().unwrap_or(&0));
                    }
                    if cancelled() {
                        break FinishReason::Cancelled;
                    }
                    if let Some(finish) = self.round(&mut out, draft, start, &mut first_at)? {
                        break finish;
                    }
                },
            }
        };

        let (text, tokens, finish) = out.finish(self.detokenizer, finish, self.rules)?;
        self.stats.generated_tokens = tokens.len();
        self.spec.generated = tokens.len();
        self.stats.sampling_time = self.sampling;
        self.stats.decode_forward_time = self.forward;
        self.stats.total_time = start.elapsed();
        let generation = Generation {
            text,
            tokens,
            finish,
            stats: self.stats,
            steps: std::mem::take(&mut self.steps),
        };
        Ok((generation, self.spec))
    }

    /// One round: draft, verify in one target step, emit the accepted tokens and the drawn
    /// one, roll back. Returns why the generation ends, if it does.
    fn round(
        &mut self,
        out: &mut Decoder<'_>,
        draft: &mut Draft<'_>,
        start: Instant,
        first_at: &mut Option<Instant>,
    ) -> Result<Option<FinishReason>> {
        let held = out.emitter().history().len();
        let generated = held - out.emitter().prompt_len();
        // Room for the drafts: the token budget keeps one place for the extra token, and the
        // target must hold the history and every draft.
        let k = self
            .k
            .min(self.options.max_tokens.saturating_sub(generated + 1))
            .min(self.target.context_len().saturating_sub(held));

        let t = Instant::now();
        let (drafts, qs) = self.draft(out, draft, k)?;
        let drafted_at = t.elapsed();
        self.spec.draft_time += drafted_at;
        self.spec.drafted += drafts.len();

        let pending = *out.emitter().history().last().unwrap_or(&0);
        let mut feed = Vec::with_capacity(drafts.len() + 1);
        feed.push(pending);
        feed.extend_from_slice(&drafts);
        let t = Instant::now();
        let rows = self.target.step(&[Feed::all(self.seq, &feed)])?;
        self.forward += t.elapsed();
        self.spec.target_forwards += 1;

        let before = out.emitter().generated().len();
        let finish = self.emit_verified(out, &rows, &drafts, &qs, start, first_at)?;
        if finish.is_some() {
            return Ok(finish);
        }
        let accepted = out.emitter().generated().len() - before - 1;
        self.target.truncate(self.seq, held + accepted)?;
        if let Draft::Model {
            model,
            pipeline,
            seq,
            ..
        } = draft
        {
            // The draft model holds the history and the drafts fed to it: keep what the
            // accepted tokens share with it.
            let fed = model.position(*seq)?;
            model.truncate(*seq, fed.min(held + accepted))?;
            // Roll the draft pipeline back to the accepted drafts (the loop then gives it the
            // round's last token).
            if accepted < drafts.len() {
                let generated = out.emitter().generated();
                reset_pipeline(
                    pipeline,
                    self.prompt,
                    &generated[..generated.len() - 1],
                    self.options.accept_prompt,
                );
            }
        }
        Ok(None)
    }

    /// Up to `k` draft tokens after the history and the distributions they were drawn from.
    fn draft(
        &mut self,
        out: &Decoder<'_>,
        draft: &mut Draft<'_>,
        k: usize,
    ) -> Result<(Vec<u32>, Vec<Distribution>)> {
        let history = out.emitter().history();
        match draft {
            Draft::Lookup { max_ngram } => {
                let drafts = lookup(history, *max_ngram, k, &self.rules.eos).to_vec();
                let qs = drafts.iter().map(|&x| Distribution::Point(x)).collect();
                Ok((drafts, qs))
            }
            Draft::Model {
                model,
                pipeline,
                selector,
                seq,
            } => {
                // The draft model must hold the history and every draft but the last.
                let k = k.min((model.context_len() + 1).saturating_sub(history.len()));
                let (mut drafts, mut qs) = (Vec::with_capacity(k), Vec::with_capacity(k));
                if k == 0 {
                    return Ok((drafts, qs));
                }
                let vocab = model.vocab_size();
                let target_vocab = self.target.vocab_size();
                let mut scratch = history.to_vec();
                let fed = model.position(*seq)?;
                let mut rows = model.step(&[Feed::last(*seq, &history[fed..])])?;
                self.spec.draft_forwards += 1;
                loop {
                    let row = rows.pop().unwrap_or_default();
                    let step = scratch.len() - out.emitter().prompt_len();
                    load_row(&mut self.candidates, row, vocab, step)?;
                    let cx = Context {
                        history: &scratch,
                        prompt_len: out.emitter().prompt_len(),
                        vocab: self.options.vocab,
                        step,
                    };
                    let q = selector.distribution(pipeline, &mut self.candidates, &cx, vocab)?;
                    // Only ids the target knows can be drafted: `q` restricted to them is
                    // still a distribution the draft is drawn from and verified against.
                    let Some(q) = within(q, target_vocab) else {
                        break;
                    };
                    let x = draw(&q, &mut self.rng, pipeline)?;
                    pipeline.accept(x);
                    drafts.push(x);
                    qs.push(q);
                    scratch.push(x);
                    if drafts.len() == k || self.rules.eos.contains(&x) {
                        break;
                    }
                    rows = model.step(&[Feed::last(*seq, &[x])])?;
                    self.spec.draft_forwards += 1;
                }
                Ok((drafts, qs))
            }
        }
    }

    /// Goes through the target's `rows` (row `i` after the history and `drafts[..i]`): checks
    /// each draft against the target's distribution, emits it if accepted, or the residual's
    /// draw that replaces it; after all drafts, emits a draw from the last row. Returns why
    /// the generation ends, if it does.
    fn emit_verified(
        &mut self,
        out: &mut Decoder<'_>,
        rows: &[Vec<f32>],
        drafts: &[u32],
        qs: &[Distribution],
        start: Instant,
        first_at: &mut Option<Instant>,
    ) -> Result<Option<FinishReason>> {
        let vocab = self.target.vocab_size();
        let row_of = |i: usize| rows.first().and_then(|r| r.get(i * vocab..(i + 1) * vocab));
        let mut scratch = out.emitter().history().to_vec();
        scratch.extend_from_slice(drafts);
        let held = out.emitter().history().len();
        for i in 0..=drafts.len() {
            let t = Instant::now();
            let row = row_of(i).ok_or(Error::LogitsLength {
                expected: (drafts.len() + 1) * vocab,
                found: rows.first().map_or(0, Vec::len),
            })?;
            let prompt_len = out.emitter().prompt_len();
            let step = held + i - prompt_len;
            let candidates = out.load(row.to_vec(), step)?;
            let cx = Context {
                history: &scratch[..held + i],
                prompt_len,
                vocab: self.options.vocab,
                step,
            };
            let p = self
                .selector
                .distribution(self.pipeline, candidates, &cx, vocab)?;
            let (token, rejected) = match drafts.get(i) {
                Some(&x) => match verify(&p, &qs[i], x, &mut self.rng) {
                    Some(Verdict::Accept) => {
                        self.spec.accepted += 1;
                        (x, false)
                    }
                    Some(Verdict::Reject(y)) => (y, true),
                    None => (draw(&p, &mut self.rng, self.pipeline)?, true),
                },
                None => (draw(&p, &mut self.rng, self.pipeline)?, false),
            };
            self.pipeline.accept(token);
            self.sampling += t.elapsed();
            if self.options.step_stats {
                self.steps.push(StepStats::of(row, token, out.candidates()));
            }
            let now = Instant::now();
            let first = *first_at.get_or_insert_with(|| {
                self.stats.time_to_first_token = now - start;
                now
            });
            self.stats.decode_time = now - first;
            if let Some(finish) = out.emit(self.detokenizer, token, self.rules)? {
                return Ok(Some(finish));
            }
            if rejected {
                break;
            }
        }
        Ok(None)
    }
}

/// `q` restricted to the ids below `vocab` and renormalized; `None` when nothing is left.
fn within(q: Distribution, vocab: usize) -> Option<Distribution> {
    match q {
        Distribution::Point(x) => ((x as usize) < vocab).then_some(q),
        Distribution::Probs(mut p) if p.len() > vocab => {
            p.truncate(vocab);
            let total: f64 = p.iter().sum();
            (total > 0.0).then(|| {
                for x in &mut p {
                    *x /= total;
                }
                Distribution::Probs(p)
            })
        }
        q => Some(q),
    }
}

/// Resets `pipeline` and replays the prompt (when the options accept it) and `generated`.
fn reset_pipeline(pipeline: &mut Pipeline, prompt: &[u32], generated: &[u32], accept_prompt: bool) {
    pipeline.reset();
    if accept_prompt {
        for &t in prompt {
            pipeline.accept(t);
        }
    }
    for &t in generated {
        pipeline.accept(t);
    }
}
