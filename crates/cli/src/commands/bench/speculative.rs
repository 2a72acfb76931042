//! `sieve bench model --draft DIR` / `--lookup N`: how much faster speculative decoding
//! generates than plain decoding on the same prompt.
//!
//! Both runs decode `--gen` tokens greedily after the same prompt (so they produce the very
//! same tokens: greedy speculative decoding is exact), three times each, alternating plain
//! and speculative so that the machine's noise falls on both; each run's rate is its tokens
//! after the first over the time after the first (the prefill left out), and the medians are
//! compared.

use serde::Serialize;
use sieve_backends::LoadedModel;
use sieve_core::Pipeline;
use sieve_engine::{
    generate, generate_speculative, Detokenize, Drafter, GenerateOptions, SpeculativeOptions,
};
use sieve_samplers::greedy::Greedy;

use crate::error::{Failure, ResultExt};

/// Runs of each kind.
const ROUNDS: usize = 3;

/// What the comparison reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpeculativeReport {
    /// `draft` or `lookup`.
    pub drafter: String,
    /// Draft tokens per round.
    pub draft_tokens: usize,
    /// Plain greedy decoding, tokens per second (median of the runs).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub plain_tokens_per_s: f64,
    /// Speculative greedy decoding, tokens per second (median of the runs).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub speculative_tokens_per_s: f64,
    /// `speculative_tokens_per_s / plain_tokens_per_s`.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub speedup: f64,
    /// Accepted over drafted tokens.
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub acceptance_rate: f64,
    /// Target forward passes per generated token (1 for plain decoding).
    #[serde(serialize_with = "sieve::outcome::json_f64")]
    pub target_forwards_per_token: f64,
}

fn greedy() -> Pipeline {
    Pipeline::new(vec![("greedy".to_string(), Box::new(Greedy::new()))])
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Times plain and speculative greedy decoding of `tokens` tokens after `prompt` on
/// `target`, drafting with `draft` (a model) or by prompt lookup when it is `None`.
///
/// # Errors
/// Runtime: a model failure; usage: speculative output that differs from plain output (the
/// models broke the exactness contract).
pub fn compare(
    target: &mut LoadedModel,
    mut draft: Option<&mut LoadedModel>,
    detokenizer: &dyn Detokenize,
    prompt: &[u32],
    tokens: usize,
    draft_tokens: usize,
) -> Result<SpeculativeReport, Failure> {
    let options = GenerateOptions {
        max_tokens: tokens,
        ..Default::default()
    };
    let speculative = SpeculativeOptions {
        draft_tokens,
        seed: 0,
    };
    let (mut plain, mut fast, mut last) = (Vec::new(), Vec::new(), None);
    for _ in 0..ROUNDS {
        let g = generate(
            target,
            detokenizer,
            &mut greedy(),
            prompt,
            &options,
            &mut |_| {},
        )
        .map_err(anyhow::Error::new)
        .runtime()?;
        plain.push(g.stats.decode_tokens_per_second());
        let mut draft_pipeline = greedy();
        let drafter = match draft.as_deref_mut() {
            Some(model) => Drafter::Model {
                model,
                pipeline: &mut draft_pipeline,
            },
            None => Drafter::Lookup { max_ngram: 2 },
        };
        let (s, stats) = generate_speculative(
            target,
            drafter,
            detokenizer,
            &mut greedy(),
            prompt,
            &options,
            &speculative,
            &mut |_| {},
        )
        .map_err(anyhow::Error::new)
        .runtime()?;
        if s.tokens != g.tokens {
            return Err(Failure::Runtime(anyhow::anyhow!(
                "speculative greedy decoding produced other tokens than plain decoding"
            )));
        }
        fast.push(s.stats.decode_tokens_per_second());
        last = Some(stats);
    }
    let stats = last.unwrap_or_default();
    let (plain, fast) = (median(plain), median(fast));
    Ok(SpeculativeReport {
        drafter: if draft.is_some() { "draft" } else { "lookup" }.to_string(),
        draft_tokens,
        plain_tokens_per_s: plain,
        speculative_tokens_per_s: fast,
        speedup: fast / plain,
        acceptance_rate: stats.acceptance_rate(),
        target_forwards_per_token: stats.target_forwards_per_token(),
    })
}
