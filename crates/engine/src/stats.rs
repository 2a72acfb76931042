//! What a generation reports besides its text: why it stopped and how fast it went; and the
//! two helpers every speed report uses: [`tokens_per_second`] and [`Summary`] (median and
//! 90th percentile of timing samples).

use std::fmt;
use std::time::Duration;

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishReason {
    /// An end-of-sequence token was chosen (its text is not emitted).
    Eos,
    /// A stop string appeared (the text is cut where it starts).
    Stop,
    /// The token budget (`max_tokens`) or the model's context was used up.
    Length,
    /// The caller cancelled (Ctrl-C, or its output went away) between two tokens.
    Cancelled,
}

impl FinishReason {
    /// `eos`, `stop`, `length` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Eos => "eos",
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for FinishReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Timings of one generation, measured with the monotonic clock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GenerationStats {
    /// Tokens of the prompt (all fed in the one prefill pass).
    pub prompt_tokens: usize,
    /// Tokens chosen by the pipeline (an EOS token included).
    pub generated_tokens: usize,
    /// The prefill forward pass.
    pub prefill_time: Duration,
    /// From the start of the call until the first token was chosen (prefill + first sample).
    pub time_to_first_token: Duration,
    /// From the first token chosen until the last one: the decode phase.
    pub decode_time: Duration,
    /// Forward passes of the decode phase only (the model's share of `decode_time`).
    pub decode_forward_time: Duration,
    /// Time spent in the sampler pipeline, over every step.
    pub sampling_time: Duration,
    /// The whole call.
    pub total_time: Duration,
}

impl GenerationStats {
    /// Prompt tokens per second of prefill (0 when nothing was measured).
    pub fn prefill_tokens_per_second(&self) -> f64 {
        tokens_per_second(self.prompt_tokens, self.prefill_time)
    }

    /// Tokens per second after the first one: `(generated − 1) / decode_time` (0 when fewer
    /// than two tokens were generated).
    pub fn decode_tokens_per_second(&self) -> f64 {
        tokens_per_second(self.generated_tokens.saturating_sub(1), self.decode_time)
    }
}

/// `tokens / time` in tokens per second; 0 when no token or no time was measured (never a
/// division by zero).
pub fn tokens_per_second(tokens: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if tokens == 0 || secs <= 0.0 {
        0.0
    } else {
        tokens as f64 / secs
    }
}

/// The median and 90th percentile of a set of timing samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The 50th percentile.
    pub median: f64,
    /// The 90th percentile.
    pub p90: f64,
}

impl Summary {
    /// Summarizes `samples` (in any order); `None` when there is none or one is NaN.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| x.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            median: quantile(&sorted, 0.5),
            p90: quantile(&sorted, 0.9),
        })
    }
}

/// The `q`-quantile of ascending `sorted` samples, interpolating linearly between the two
/// nearest ranks (position `q·(n−1)`, the usual "type 7" definition; numpy's default).
///
/// # Panics
/// If `sorted` is empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_hand() {
        // 1..=10: median at position 4.5 → 5.5; p90 at position 8.1 → 9.1.
        let xs: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.median, 5.5);
        assert!((s.p90 - 9.1).abs() < 1e-12);
        assert_eq!(
            Summary::of(&[3.0]),
            Some(Summary {
                median: 3.0,
                p90: 3.0
            })
        );
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.5), 2.0);
    }

    #[test]
    fn nothing_to_summarize() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn rates_divide_tokens_by_time_and_never_by_zero() {
        let s = GenerationStats {
            prompt_tokens: 100,
            generated_tokens: 11,
            prefill_time: Duration::from_millis(500),
            decode_time: Duration::from_secs(2),
            ..GenerationStats::default()
        };
        assert_eq!(s.prefill_tokens_per_second(), 200.0);
        assert_eq!(s.decode_tokens_per_second(), 5.0);
        assert_eq!(GenerationStats::default().decode_tokens_per_second(), 0.0);
        assert_eq!(tokens_per_second(3, Duration::ZERO), 0.0);
        assert_eq!(tokens_per_second(0, Duration::from_secs(1)), 0.0);
    }
}
