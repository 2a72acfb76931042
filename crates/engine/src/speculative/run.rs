//! One speculative generation's state and rounds (the rules are in the [module](super)
//! docs): the selector's distribution, the draft side, and [`Run`], which drafts, verifies,
//! accepts and emits.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sieve_core::{Candidates, Context, Pipeline, SieveRng};

use super::{lookup, verify, Distribution, SpeculativeStats, Verdict};
use crate::batch::{BatchModel, Feed, SeqId};
use crate::emit::EndRules;
use crate::generate::{GenerateOptions, Generation};
use crate::model::Detokenize;
use crate::stats::{FinishReason, GenerationStats};
use crate::step::{load_row, Decoder};
use crate::step_stats::StepStats;
use crate::{Error, Result};

/// Which distribution a pipeline's selector draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Selector {
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
    pub(super) fn of(pipeline: &Pipeline) -> Result<Self> {
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
pub(super) enum Draft<'a> {
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

/// The state of one speculative generation.
pub(super) struct Run<'r, 'o> {
    pub(super) target: &'r mut dyn BatchModel,
    pub(super) seq: SeqId,
    pub(super) pipeline: &'r mut Pipeline,
    pub(super) selector: Selector,
    pub(super) detokenizer: &'r dyn Detokenize,
    pub(super) prompt: &'r [u32],
    pub(super) options: &'r GenerateOptions<'o>,
    pub(super) rules: &'r EndRules,
    pub(super) k: usize,
    pub(super) rng: SieveRng,
    pub(super) candidates: Candidates,
    pub(super) stats: GenerationStats,
    pub(super) spec: SpeculativeStats,
    pub(super) steps: Vec<StepStats>,
    pub(super) sampling: Duration,
    pub(super) forward: Duration,
}

impl Run<'_, '_> {
    pub(super) fn generate(
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
