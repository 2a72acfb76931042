//! Timing a model without a sampler (for `sieve bench model`): one prefill, then single-token
//! decode steps that feed back the most likely token.

use std::time::{Duration, Instant};

use crate::generate::LogitsSource;
use crate::{Error, Result};

/// The timings of [`time_model`].
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTimings {
    /// Tokens in the prefill pass.
    pub prompt_tokens: usize,
    /// The prefill pass (prompt in, logits of the last position read back).
    pub prefill: Duration,
    /// Each decode step (one token in, logits read back), in order.
    pub decode: Vec<Duration>,
}

impl ModelTimings {
    /// Prompt tokens per second of prefill (0 when nothing was measured).
    pub fn prefill_tokens_per_second(&self) -> f64 {
        per_second(self.prompt_tokens, self.prefill)
    }

    /// Decode steps per second over all steps (0 when there was none).
    pub fn decode_tokens_per_second(&self) -> f64 {
        per_second(self.decode.len(), self.decode.iter().sum())
    }

    /// The median decode step (`None` when there was none).
    pub fn decode_median(&self) -> Option<Duration> {
        let mut sorted = self.decode.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    }
}

fn per_second(n: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if n == 0 || secs <= 0.0 {
        0.0
    } else {
        n as f64 / secs
    }
}

/// Resets `source`, prefills `prompt`, then runs `decode_tokens` single-token steps, each
/// feeding the highest-logit token of the previous step (lowest id on ties).
///
/// # Errors
/// [`Error::EmptyPrompt`], [`Error::ContextOverflow`] when `prompt` plus the decode steps do
/// not fit the context (checked before anything runs), and the source's errors.
pub fn time_model(
    source: &mut dyn LogitsSource,
    prompt: &[u32],
    decode_tokens: usize,
) -> Result<ModelTimings> {
    if prompt.is_empty() {
        return Err(Error::EmptyPrompt);
    }
    let total = prompt.len().saturating_add(decode_tokens);
    let context = source.context_len();
    if total > context {
        return Err(Error::ContextOverflow {
            tokens: total,
            context,
        });
    }
    source.reset();
    let t = Instant::now();
    let mut logits = source.next_logits(prompt)?;
    let prefill = t.elapsed();
    let mut decode = Vec::with_capacity(decode_tokens);
    for _ in 0..decode_tokens {
        let next = argmax(&logits);
        let t = Instant::now();
        logits = source.next_logits(&[next])?;
        decode.push(t.elapsed());
    }
    Ok(ModelTimings {
        prompt_tokens: prompt.len(),
        prefill,
        decode,
    })
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

    /// Counts calls; its logits favour token `(position + 1) % 3`.
    struct Counter {
        calls: Vec<Vec<u32>>,
        position: usize,
    }

    impl LogitsSource for Counter {
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
        fn next_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
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
        let t = time_model(&mut c, &[0, 1], 3).unwrap();
        assert_eq!(c.calls, vec![vec![0, 1], vec![0], vec![1], vec![2]]);
        assert_eq!((t.prompt_tokens, t.decode.len()), (2, 3));
        assert!(t.decode_median().is_some());
    }

    #[test]
    fn requests_that_do_not_fit_are_errors() {
        let mut c = Counter {
            calls: Vec::new(),
            position: 0,
        };
        assert!(matches!(
            time_model(&mut c, &[], 3),
            Err(Error::EmptyPrompt)
        ));
        assert!(matches!(
            time_model(&mut c, &[0; 8], 3),
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
