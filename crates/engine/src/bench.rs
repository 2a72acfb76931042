//! Timing a model without a sampler (for `sieve bench model`): one prefill, then single-token
//! decode steps that feed back the most likely token ([`time_model`]); or the same decode
//! steps for several batch sizes side by side ([`time_batches`]).

use std::time::{Duration, Instant};

use crate::batch::{BatchModel, Feed, SeqId};
use crate::model::LanguageModel;
use crate::stats::{tokens_per_second, Summary};
#[cfg(doc)]
use crate::Error;
use crate::Result;

/// The timings of [`time_model`].
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTimings {
    /// Tokens in each prefill pass.
    pub prompt_tokens: usize,
    /// The first prefill pass (prompt in, logits of the last position read back): what a
    /// user waits for after loading, caches and thread pools cold.
    pub prefill: Duration,
    /// The prefills repeated after it (each on an emptied cache), warm.
    pub warm_prefills: Vec<Duration>,
    /// Each decode step (one token in, logits read back), in order, after the last prefill.
    pub decode: Vec<Duration>,
}

impl ModelTimings {
    /// Prompt tokens per second of the first prefill (0 when nothing was measured).
    pub fn prefill_tokens_per_second(&self) -> f64 {
        tokens_per_second(self.prompt_tokens, self.prefill)
    }

    /// The median and 90th percentile of the warm prefills, in milliseconds (`None` without
    /// one).
    pub fn warm_prefill_ms(&self) -> Option<Summary> {
        let ms: Vec<f64> = self
            .warm_prefills
            .iter()
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        Summary::of(&ms)
    }

    /// Prompt tokens per second at the median warm prefill (0 without one).
    pub fn warm_prefill_tokens_per_second(&self) -> f64 {
        self.warm_prefill_ms().map_or(0.0, |s| {
            tokens_per_second(self.prompt_tokens, Duration::from_secs_f64(s.median / 1e3))
        })
    }

    /// The median and 90th percentile decode step, in milliseconds (`None` when there was
    /// no step).
    pub fn decode_step_ms(&self) -> Option<Summary> {
        let steps: Vec<f64> = self.decode.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        Summary::of(&steps)
    }

    /// Decode tokens per second at the median step (one token per step): the rate a user
    /// sees once the prompt is in, robust to a slow first step (0 when there was no step).
    pub fn decode_tokens_per_second(&self) -> f64 {
        self.decode_step_ms().map_or(0.0, |s| {
            tokens_per_second(1, Duration::from_secs_f64(s.median / 1e3))
        })
    }
}

/// Resets `model` and prefills `prompt` `1 + warm_prefills` times (the first is reported
/// apart from the warm repeats), then runs `decode_tokens` single-token steps, each feeding
/// the highest-logit token of the previous step (lowest id on ties).
///
/// # Errors
/// [`Error::EmptyPrompt`], [`Error::ContextOverflow`] when `prompt` plus the decode steps do
/// not fit the context (checked before anything runs), and the model's errors.
pub fn time_model(
    model: &mut dyn LanguageModel,
    prompt: &[u32],
    decode_tokens: usize,
    warm_prefills: usize,
) -> Result<ModelTimings> {
    check_fits(prompt, decode_tokens, model.context_len())?;
    let mut prefills = Vec::with_capacity(1 + warm_prefills);
    let mut logits = Vec::new();
    for _ in 0..=warm_prefills {
        model.reset();
        model.reserve(prompt.len() + decode_tokens);
        let t = Instant::now();
        logits = model.forward(prompt)?;
        prefills.push(t.elapsed());
    }
    let prefill = prefills.remove(0);
    let mut decode = Vec::with_capacity(decode_tokens);
    for _ in 0..decode_tokens {
        let next = argmax(&logits);
        let t = Instant::now();
        logits = model.forward(&[next])?;
        decode.push(t.elapsed());
    }
    Ok(ModelTimings {
        prompt_tokens: prompt.len(),
        prefill,
        warm_prefills: prefills,
        decode,
    })
}

/// The timings of one size of [`time_batches`]: decode steps of `batch` sequences at once.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchTimings {
    /// Sequences per step.
    pub batch: usize,
    /// Each decode step (one token per sequence in, every sequence's logits read back).
    pub decode: Vec<Duration>,
}

impl BatchTimings {
    /// The median and 90th percentile step, in milliseconds (`None` without a step).
    pub fn step_ms(&self) -> Option<Summary> {
        let steps: Vec<f64> = self.decode.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        Summary::of(&steps)
    }

    /// Tokens per second over all sequences at the median step (0 without a step).
    pub fn tokens_per_second(&self) -> f64 {
        self.step_ms().map_or(0.0, |s| {
            tokens_per_second(self.batch, Duration::from_secs_f64(s.median / 1e3))
        })
    }
}

/// How the sequences of [`time_batches`] come by their prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchPrompts {
    /// One sequence prefills the prompt and the others are its forks (parallel samples,
    /// beams, the server's `n`): the model may hold the prompt's cache once for all of them.
    Forked,
    /// Every sequence prefills the prompt itself, so none shares a cache: what as many
    /// different prompts cost a step.
    Separate,
}

/// Times decode steps of several batch sizes side by side. For each size of `sizes`, a group
/// of that many sequences gets the prompt (see [`BatchPrompts`]); then come `decode_tokens`
/// rounds, each timing one step of every group in turn, a step feeding each of its
/// sequences the argmax of its previous logits, all in one [`BatchModel::step`]. The sizes'
/// steps are spread over the same stretch of time, so a machine that speeds up or slows
/// down meanwhile (another tenant, the clock) moves them all alike and their ratios hold.
/// Every sequence is closed at the end. Returns one [`BatchTimings`] per size, in order.
///
/// # Errors
/// [`Error::EmptyPrompt`], [`Error::ContextOverflow`] (checked before anything runs), and
/// the model's errors.
pub fn time_batches(
    model: &mut dyn BatchModel,
    prompt: &[u32],
    decode_tokens: usize,
    sizes: &[usize],
    prompts: BatchPrompts,
) -> Result<Vec<BatchTimings>> {
    check_fits(prompt, decode_tokens, model.context_len())?;
    let mut groups: Vec<Group> = Vec::with_capacity(sizes.len());
    let run = (|| {
        for &batch in sizes {
            groups.push(Group::default());
            let group = groups.last_mut().expect("just pushed");
            group.start(model, prompt, batch, prompts)?;
        }
        for _ in 0..decode_tokens {
            for group in &mut groups {
                group.step(model)?;
            }
        }
        Ok(())
    })();
    let timings = groups
        .iter()
        .map(|g| BatchTimings {
            batch: g.seqs.len(),
            decode: g.decode.clone(),
        })
        .collect();
    for s in groups.into_iter().flat_map(|g| g.seqs) {
        model.close(s);
    }
    run.map(|()| timings)
}

/// One batch size's sequences in [`time_batches`], their next tokens and their timed steps.
#[derive(Debug, Default)]
struct Group {
    seqs: Vec<SeqId>,
    next: Vec<u32>,
    decode: Vec<Duration>,
}

impl Group {
    /// Opens `batch` sequences holding `prompt`: one prefills it and the others fork it, or
    /// each prefills it itself. Sequences are recorded as soon as they exist (to be closed
    /// whatever happens next).
    fn start(
        &mut self,
        model: &mut dyn BatchModel,
        prompt: &[u32],
        batch: usize,
        prompts: BatchPrompts,
    ) -> Result<()> {
        let first = model.open();
        self.seqs.push(first);
        let logits = model
            .step(&[Feed::last(first, prompt)])?
            .pop()
            .unwrap_or_default();
        for _ in 1..batch {
            let seq = match prompts {
                BatchPrompts::Forked => model.fork(first)?,
                BatchPrompts::Separate => model.open(),
            };
            self.seqs.push(seq);
            if prompts == BatchPrompts::Separate {
                model.step(&[Feed::last(seq, prompt)])?;
            }
        }
        self.next = vec![argmax(&logits); batch];
        Ok(())
    }

    /// One timed step of every sequence of the group.
    fn step(&mut self, model: &mut dyn BatchModel) -> Result<()> {
        let feeds: Vec<Feed<'_>> = self
            .seqs
            .iter()
            .zip(&self.next)
            .map(|(&s, t)| Feed::last(s, std::slice::from_ref(t)))
            .collect();
        let t = Instant::now();
        let rows = model.step(&feeds)?;
        self.decode.push(t.elapsed());
        self.next = rows.iter().map(|l| argmax(l)).collect();
        Ok(())
    }
}

/// Checks that `prompt` is not empty and that it and `decode_tokens` more fit `context`.
fn check_fits(prompt: &[u32], decode_tokens: usize, context: usize) -> Result<()> {
    crate::step::check_prompt(prompt, decode_tokens, context)
}

/// The first index of the largest value (NaN never wins); 0 for an empty slice.
fn argmax(logits: &[f32]) -> u32 {
    let mut best: Option<(usize, f32)> = None;
    for (i, &x) in logits.iter().enumerate() {
        if !x.is_nan() && best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.map_or(0, |(i, _)| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    /// Counts calls; its logits favour token `(position + 1) % 3`.
    struct Counter {
        calls: Vec<Vec<u32>>,
        position: usize,
    }

    impl LanguageModel for Counter {
        fn vocab_size(&self) -> usize {
            3
        }
        fn context_len(&self) -> usize {
            10
        }
        fn position(&self) -> usize {
            self.position
        }
        fn reset(&mut self) {
            self.position = 0;
        }
        fn truncate(&mut self, len: usize) {
            self.position = self.position.min(len);
        }
        fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
            self.calls.push(tokens.to_vec());
            self.position += tokens.len();
            let mut l = vec![0.0; 3];
            l[(self.position + 1) % 3] = 1.0;
            Ok(l)
        }
    }

    #[test]
    fn prefills_once_then_feeds_back_the_argmax() {
        let mut c = Counter {
            calls: Vec::new(),
            position: 0,
        };
        let t = time_model(&mut c, &[0, 1], 3, 2).unwrap();
        assert_eq!(
            c.calls,
            vec![
                vec![0, 1],
                vec![0, 1],
                vec![0, 1],
                vec![0],
                vec![1],
                vec![2]
            ]
        );
        assert_eq!((t.prompt_tokens, t.decode.len()), (2, 3));
        assert_eq!(t.warm_prefills.len(), 2);
        assert!(t.warm_prefill_ms().is_some());
        assert!(t.decode_step_ms().is_some());
    }

    #[test]
    fn decode_speed_is_one_token_per_median_step() {
        let ms = Duration::from_millis;
        let t = ModelTimings {
            prompt_tokens: 50,
            prefill: ms(250),
            warm_prefills: vec![ms(100), ms(125), ms(500)],
            decode: vec![ms(40), ms(10), ms(20), ms(20), ms(30)],
        };
        assert_eq!(t.prefill_tokens_per_second(), 200.0);
        assert_eq!(t.warm_prefill_tokens_per_second(), 400.0);
        let steps = t.decode_step_ms().unwrap();
        assert_eq!(steps.median, 20.0);
        assert!((steps.p90 - 36.0).abs() < 1e-9);
        assert!((t.decode_tokens_per_second() - 50.0).abs() < 1e-9);
        let none = ModelTimings {
            decode: Vec::new(),
            ..t
        };
        assert_eq!(
            (none.decode_step_ms(), none.decode_tokens_per_second()),
            (None, 0.0)
        );
    }

    #[test]
    fn requests_that_do_not_fit_are_errors() {
        let mut c = Counter {
            calls: Vec::new(),
            position: 0,
        };
        assert!(matches!(
            time_model(&mut c, &[], 3, 0),
            Err(Error::EmptyPrompt)
        ));
        assert!(matches!(
            time_model(&mut c, &[0; 8], 3, 0),
            Err(Error::ContextOverflow {
                tokens: 11,
                context: 10
            })
        ));
        assert!(c.calls.is_empty());
    }

    #[test]
    fn argmax_takes_the_first_maximum_and_skips_nan() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0]), 1);
        assert_eq!(argmax(&[f32::NAN, 2.0, 1.0]), 1);
        assert_eq!(argmax(&[]), 0);
    }
}
