//! The state of one beam search and its steps (the rules are in the [module](super) docs):
//! score every running beam's row, rank the continuations, keep finished hypotheses, stop,
//! and advance the beams (fork, close, hand out pipelines).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use sieve_core::{Context, Pipeline};

use super::{BeamOptions, BeamSearch, EarlyStopping, Hypothesis};
use crate::batch::{BatchModel, Feed, SeqId};
use crate::stats::{FinishReason, GenerationStats};
use crate::step::Scorer;
use crate::{Error, Result};

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
pub(super) struct Search<'o> {
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
    /// The scoring step (row checks, log-softmax, stages).
    scorer: Scorer,
    history: Vec<u32>,
    stats: GenerationStats,
}

impl<'o> Search<'o> {
    /// A search of `prompt` under `options` (already checked), one pipeline per beam, for a
    /// model of `context` positions and `vocab_size` logits.
    pub(super) fn new(
        options: &'o BeamOptions<'o>,
        prompt: &'o [u32],
        pipelines: Vec<Pipeline>,
        context: usize,
        vocab_size: usize,
    ) -> Self {
        let mut eos = options.eos.clone();
        eos.sort_unstable();
        eos.dedup();
        Search {
            options,
            prompt,
            limit: options.max_tokens.min((context - prompt.len()).max(1)),
            k: (1 + eos.len()).max(2) * options.beams,
            eos,
            vocab_size,
            pipelines,
            free: Vec::new(),
            running: Vec::new(),
            finished: Vec::new(),
            open: Vec::new(),
            scorer: Scorer::new(),
            history: Vec::new(),
            stats: GenerationStats {
                prompt_tokens: prompt.len(),
                ..Default::default()
            },
        }
    }

    /// Closes every sequence the search opened in `model`.
    pub(super) fn close(&mut self, model: &mut dyn BatchModel) {
        for seq in self.open.drain(..) {
            model.close(seq);
        }
    }

    /// The `R` best finished hypotheses, best first, and the timings.
    pub(super) fn into_result(self, start: Instant) -> BeamSearch {
        let mut stats = self.stats;
        stats.total_time = start.elapsed();
        let hypotheses = self
            .finished
            .into_iter()
            .take(self.options.num_return)
            .map(|f| Hypothesis {
                tokens: f.tokens,
                score: f64::from(f.score),
                finish: f.finish,
            })
            .collect();
        BeamSearch { hypotheses, stats }
    }

    /// Runs the search to its end (step 5 of the module docs).
    pub(super) fn run(&mut self, model: &mut dyn BatchModel, start: Instant) -> Result<()> {
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
                    if let Some(e) = self.scorer.take_dead() {
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
        for (beam, row) in self.running.iter().zip(rows) {
            self.history.clear();
            self.history.extend_from_slice(self.prompt);
            self.history.extend_from_slice(&beam.tokens);
            let cx = Context {
                history: &self.history,
                prompt_len: self.prompt.len(),
                vocab: self.options.vocab,
                step,
            };
            let pipeline = &mut self.pipelines[beam.pipe];
            out.push(self.scorer.score(pipeline, row, self.vocab_size, &cx)?);
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
