//! Parallel samples: K independent continuations of one prompt, decoded together.
//!
//! The prompt is prefilled once; the other K − 1 sequences are forks of its cache (no second
//! prefill). Every step feeds the last token of each unfinished sequence in one
//! [`BatchModel::step`], so the weights are read once for all of them. Each sequence has its
//! own pipeline (its own stage state and random stream: the caller builds pipeline `i` with
//! seed `seed + i`) and its own [`Decoder`] (the [step](crate::step) every mode shares); a sequence that ends is closed and leaves the
//! batch. Since the model is batch invariant, sequence `i` is exactly what a plain
//! [`generate()`](fn@crate::generate) with pipeline `i` gives.

use std::sync::atomic::Ordering;
use std::time::Instant;

use sieve_core::Pipeline;

use crate::batch::{BatchModel, Feed, SeqId};
use crate::generate::{GenerateOptions, Generation};
use crate::model::Detokenize;
use crate::stats::{FinishReason, GenerationStats};
use crate::step::{check_prompt, Decoder};
use crate::step_stats::StepStats;
use crate::Result;

/// Where one sequence's text goes.
type Sink<'a> = Box<dyn FnMut(&str) + 'a>;

/// One running sequence.
struct Running<'f> {
    seq: SeqId,
    pipeline: Pipeline,
    out: Decoder<'f>,
    steps: Vec<StepStats>,
    /// Time spent in the pipeline.
    sampling: std::time::Duration,
}

/// Generates one continuation of `prompt` per pipeline, all in the same batch, and returns
/// them in the order of `pipelines`. `on_text(i, text)` streams sequence `i`'s text.
///
/// The [`GenerateOptions`] apply to every sequence. Each [`Generation`]'s stats share the
/// prefill and time to first token; its decode time runs until that sequence ended.
///
/// # Errors
/// As [`generate()`](fn@crate::generate), and the model's [`BatchModel`] errors.
pub fn generate_parallel(
    model: &mut dyn BatchModel,
    detokenizer: &dyn Detokenize,
    pipelines: Vec<Pipeline>,
    prompt: &[u32],
    options: &GenerateOptions<'_>,
    on_text: &mut dyn FnMut(usize, &str),
) -> Result<Vec<Generation>> {
    let start = Instant::now();
    let context = model.context_len();
    check_prompt(prompt, 0, context)?;
    let rules = options.end_rules(context)?;
    let k = pipelines.len();
    let vocab_size = model.vocab_size();
    let mut stats = GenerationStats {
        prompt_tokens: prompt.len(),
        ..Default::default()
    };
    if options.max_tokens == 0 || k == 0 {
        stats.total_time = start.elapsed();
        let empty = Generation {
            text: String::new(),
            tokens: Vec::new(),
            finish: FinishReason::Length,
            stats,
            steps: Vec::new(),
        };
        return Ok(vec![empty; k]);
    }
    // Each sequence streams through its own callback, all forwarding to `on_text`.
    let on_text = std::cell::RefCell::new(on_text);
    let mut sinks: Vec<Sink<'_>> = (0..k)
        .map(|i| {
            let on_text = &on_text;
            Box::new(move |text: &str| (on_text.borrow_mut())(i, text)) as Sink<'_>
        })
        .collect();

    let first = model.open();
    // The forks copy the hint with the prompt.
    model.reserve(first, prompt.len().saturating_add(options.max_tokens));
    let t = Instant::now();
    let prefill = model.step(&[Feed::last(first, prompt)]);
    stats.prefill_time = t.elapsed();
    let logits = match prefill {
        Ok(mut rows) => rows.pop().unwrap_or_default(),
        Err(e) => {
            model.close(first);
            return Err(e);
        }
    };
    let mut running: Vec<Option<Running<'_>>> = Vec::with_capacity(k);
    let mut done: Vec<Option<Generation>> = (0..k).map(|_| None).collect();
    let result = (|| -> Result<()> {
        for (i, (mut pipeline, sink)) in pipelines.into_iter().zip(sinks.iter_mut()).enumerate() {
            let seq = if i == 0 { first } else { model.fork(first)? };
            pipeline.reset();
            if options.accept_prompt {
                for &t in prompt {
                    pipeline.accept(t);
                }
            }
            running.push(Some(Running {
                seq,
                pipeline,
                out: Decoder::new(detokenizer, prompt, vocab_size, sink.as_mut())?,
                steps: Vec::new(),
                sampling: std::time::Duration::ZERO,
            }));
        }
        let mut rows: Vec<Vec<f32>> = vec![logits; 1];
        rows.resize(k, rows[0].clone());
        let mut live: Vec<usize> = (0..k).collect();
        let mut last = vec![0u32; k];
        let mut first_at: Option<Instant> = None;
        while !live.is_empty() {
            let cancelled = options
                .cancel
                .is_some_and(|flag| flag.load(Ordering::Relaxed));
            let mut next = Vec::with_capacity(live.len());
            for (&i, logits) in live.iter().zip(rows.drain(..)) {
                let r = running[i].as_mut().unwrap_or_else(|| unreachable!());
                let finish = if cancelled {
                    Some(FinishReason::Cancelled)
                } else {
                    let token = sample(r, logits, options)?;
                    last[i] = token;
                    r.out.emit(detokenizer, token, &rules)?
                };
                let now = Instant::now();
                let first = *first_at.get_or_insert_with(|| {
                    stats.time_to_first_token = now - start;
                    now
                });
                match finish {
                    None => next.push(i),
                    Some(finish) => {
                        let r = running[i].take().unwrap_or_else(|| unreachable!());
                        model.close(r.seq);
                        let (text, tokens, finish) = r.out.finish(detokenizer, finish, &rules)?;
                        let mut stats = stats;
                        stats.generated_tokens = tokens.len();
                        stats.sampling_time = r.sampling;
                        stats.decode_time = now - first;
                        stats.total_time = start.elapsed();
                        done[i] = Some(Generation {
                            text,
                            tokens,
                            finish,
                            stats,
                            steps: r.steps,
                        });
                    }
                }
            }
            live = next;
            if live.is_empty() {
                break;
            }
            let feeds: Vec<Feed<'_>> = live
                .iter()
                .map(|&i| {
                    let seq = running[i].as_ref().unwrap_or_else(|| unreachable!()).seq;
                    Feed::last(seq, std::slice::from_ref(&last[i]))
                })
                .collect();
            rows = model.step(&feeds)?;
        }
        Ok(())
    })();
    for r in running.iter().flatten() {
        model.close(r.seq);
    }
    result?;
    Ok(done.into_iter().flatten().collect())
}

/// Runs sequence `r`'s step on `logits`: the token its pipeline chose and accepted.
fn sample(r: &mut Running<'_>, logits: Vec<f32>, options: &GenerateOptions<'_>) -> Result<u32> {
    let t = Instant::now();
    let sampled = r
        .out
        .sample(&mut r.pipeline, logits, options.vocab, options.step_stats)?;
    r.sampling += t.elapsed();
    if let Some(raw) = sampled.raw {
        r.steps
            .push(StepStats::of(&raw, sampled.token, r.out.candidates()));
    }
    Ok(sampled.token)
}
