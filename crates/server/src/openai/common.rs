//! Response parts both endpoints share: usage, log-probabilities, finish reasons, ids.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use sieve_engine::FinishReason;

/// `usage`.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Generated tokens over every choice (end-of-sequence tokens included).
    pub completion_tokens: usize,
    /// Their sum.
    pub total_tokens: usize,
}

impl Usage {
    /// The usage of a prompt and its generated tokens.
    pub fn new(prompt_tokens: usize, completion_tokens: usize) -> Self {
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    }
}

/// What every response and stream chunk is: OpenAI's envelope around the choices
/// (`chat.completion`, `chat.completion.chunk`, `text_completion`), with sieve's `sampler`
/// and `seed`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Envelope<C> {
    /// `chatcmpl-…` / `cmpl-…` (the same in every chunk of a stream).
    pub id: String,
    /// The object's kind.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The model served.
    pub model: String,
    /// The choices (in a chunk: the one that moved; none in a usage chunk).
    pub choices: Vec<C>,
    /// Token counts: always in a whole response; in a stream, only in the last chunk when
    /// `stream_options.include_usage` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// sieve's extension: the canonical pipeline every choice ran (in a stream, in the first
    /// chunk only: a long pipeline would otherwise be sent again with every token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    /// sieve's extension: the seed (choice `i` ran with `seed + i`); in a stream, in the
    /// first chunk only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// OpenAI's `finish_reason`: `stop` (an end-of-sequence token or a stop string) or `length`.
pub fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Eos | FinishReason::Stop | FinishReason::Cancelled => "stop",
        FinishReason::Length => "length",
    }
}

/// The log-probability OpenAI's clients can read for an impossible token (JSON has no
/// `-inf`), as vLLM reports it.
pub const IMPOSSIBLE_LOGPROB: f32 = -9999.0;

/// A log-probability as JSON can carry it.
pub fn finite(logprob: f32) -> f32 {
    if logprob.is_finite() {
        logprob
    } else {
        IMPOSSIBLE_LOGPROB
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh response id: `prefix-` and 32 random hex digits (128 bits from the system), so
/// one client can neither count nor guess the ids of others' responses.
pub fn response_id(prefix: &str) -> String {
    format!("{prefix}-{}", crate::ids::random_hex())
}

#[cfg(test)]
mod tests {
    use super::response_id;

    #[test]
    fn response_ids_are_random_not_sequential() {
        let a = response_id("cmpl");
        let b = response_id("cmpl");
        assert!(
            a.starts_with("cmpl-") && a.len() == "cmpl-".len() + 32,
            "{a}"
        );
        assert_ne!(a, b);
        // Today's sequential ids differ only in their last digits.
        assert_ne!(a[..a.len() - 4], b[..b.len() - 4], "{a} then {b}");
    }
}
