//! What a generation reports besides its text: why it stopped and how fast it went.

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
}

impl FinishReason {
    /// `eos`, `stop` or `length`.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Eos => "eos",
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
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
        rate(self.prompt_tokens, self.prefill_time)
    }

    /// Tokens per second after the first one: `(generated − 1) / decode_time` (0 when fewer
    /// than two tokens were generated).
    pub fn decode_tokens_per_second(&self) -> f64 {
        rate(self.generated_tokens.saturating_sub(1), self.decode_time)
    }
}

fn rate(tokens: usize, time: Duration) -> f64 {
    let secs = time.as_secs_f64();
    if tokens == 0 || secs <= 0.0 {
        0.0
    } else {
        tokens as f64 / secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
