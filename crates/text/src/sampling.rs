//! The pipeline and generation defaults of a model directory, written once for every front end
//! (`sieve generate`, `sieve serve`, the Python package): what runs when the user names no
//! pipeline, how many tokens by default, and the seed of a run that gives none.
//!
//! A pipeline is parsed once ([`sieve_dsl::Parsed`]); every copy a run needs (one per sequence,
//! per beam, per choice, for a draft model) is built from that parse with
//! [`sieve_dsl::Parsed::copies`] or [`sieve_dsl::Parsed::build`].

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use sieve_core::Registry;
use sieve_dsl::{Diagnostic, Parsed};

use crate::GenerationConfig;

/// The pipeline used when neither the user nor `generation_config.json` says otherwise.
pub const FALLBACK_PIPELINE: &str = "top_k(40) | top_p(0.95) | min_p(0.05) | temp(0.8)";
/// Tokens generated when the user gives no limit and the generation config has no
/// `max_new_tokens`.
pub const DEFAULT_MAX_TOKENS: usize = 128;

/// The pipeline `generation_config.json` asks for, in transformers' order (repetition
/// penalty, temperature, top-k, top-p, min-p); `greedy` when `do_sample` is false; `None`
/// when it sets none of these.
pub fn generation_pipeline(config: &GenerationConfig) -> Option<String> {
    if config.do_sample == Some(false) {
        return Some("greedy".to_string());
    }
    let mut stages = Vec::new();
    if let Some(r) = config.repetition_penalty.filter(|&r| r != 1.0) {
        stages.push(format!("penalty(repeat={r:?}, last_n=4294967295)"));
    }
    if let Some(t) = config.temperature {
        stages.push(format!("temp({t:?})"));
    }
    if let Some(k) = config.top_k {
        stages.push(format!("top_k({k})"));
    }
    if let Some(p) = config.top_p {
        stages.push(format!("top_p({p:?})"));
    }
    if let Some(p) = config.min_p {
        stages.push(format!("min_p({p:?})"));
    }
    (!stages.is_empty()).then(|| stages.join(" | "))
}

/// The text of the default pipeline: `sampler` when given, else `generation_config.json`'s
/// ([`generation_pipeline`]), else [`FALLBACK_PIPELINE`].
pub fn default_text(sampler: Option<&str>, config: &GenerationConfig) -> String {
    match sampler {
        Some(text) => text.to_string(),
        None => generation_pipeline(config).unwrap_or_else(|| FALLBACK_PIPELINE.to_string()),
    }
}

/// The default pipeline ([`default_text`]), parsed once.
///
/// # Errors
/// The text's [`Diagnostic`]; render it with [`default_text`]'s text.
pub fn default_pipeline(
    sampler: Option<&str>,
    config: &GenerationConfig,
    registry: &Registry,
) -> Result<Parsed, Diagnostic> {
    Parsed::parse(&default_text(sampler, config), registry)
}

/// Tokens to generate: `asked`, else `generation_config.json`'s `max_new_tokens`, else
/// [`DEFAULT_MAX_TOKENS`].
pub fn max_tokens(asked: Option<usize>, config: &GenerationConfig) -> usize {
    asked
        .or(config.max_new_tokens.map(|n| n as usize))
        .unwrap_or(DEFAULT_MAX_TOKENS)
}

/// A seed for a run that gives none: from the process's random hasher keys (drawn from the
/// OS), the time and the process id, cut to 53 bits so that it prints and parses exactly
/// everywhere (JSON readers that use doubles, a pipeline's `seed=` argument).
pub fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.finish() >> 11
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_config_defaults_become_a_pipeline_in_transformers_order() {
        let mut config = GenerationConfig::default();
        assert_eq!(generation_pipeline(&config), None);
        assert_eq!(default_text(None, &config), FALLBACK_PIPELINE);
        assert_eq!(default_text(Some("greedy"), &config), "greedy");
        config.temperature = Some(0.6);
        config.top_p = Some(0.9);
        config.top_k = Some(50);
        assert_eq!(
            generation_pipeline(&config).as_deref(),
            Some("temp(0.6) | top_k(50) | top_p(0.9)")
        );
        config.do_sample = Some(false);
        assert_eq!(generation_pipeline(&config).as_deref(), Some("greedy"));
        assert_eq!(max_tokens(None, &config), DEFAULT_MAX_TOKENS);
        config.max_new_tokens = Some(7);
        assert_eq!(max_tokens(None, &config), 7);
        assert_eq!(max_tokens(Some(3), &config), 3);
    }

    #[test]
    fn random_seeds_fit_in_53_bits_and_differ() {
        let seeds: Vec<u64> = (0..8).map(|_| random_seed()).collect();
        assert!(seeds.iter().all(|&s| s < 1 << 53));
        assert!(seeds.windows(2).any(|w| w[0] != w[1]), "{seeds:?}");
    }
}
