//! The pipeline and generation defaults of a model directory, written once for every front end
//! (`sieve generate`, `sieve serve`, the Python package): what runs when the user names no
//! pipeline, how many tokens by default, and the seed of a run that gives none; and the one
//! mapping of an OpenAI-style request's sampling fields onto a pipeline ([`from_fields`]).
//!
//! A pipeline is parsed once ([`sieve_dsl::Parsed`]); every copy a run needs (one per sequence,
//! per beam, per choice, for a draft model) is built from that parse with
//! [`sieve_dsl::Parsed::copies`] or [`sieve_dsl::Parsed::build`]. Fields that are not pipeline
//! text become typed stages ([`sieve_dsl::PipelineSource::stages`]): nothing is formatted to be
//! parsed back.
//!
//! # Request fields → a pipeline
//!
//! - `sampler` (a pipeline string, or a list of stage objects) is used as written and
//!   overrides every other sampling field (`response_format` and `logit_bias` included); the
//!   server handles it before [`from_fields`].
//! - A request that sets no sampling field runs the server's default pipeline
//!   ([`default_pipeline`]): `--sampler`, else the one `generation_config.json` gives, else
//!   sieve's fallback — exactly what `sieve generate` runs without `--sampler`, so one seed
//!   gives one text everywhere.
//! - Otherwise the fields ([`Fields`]) become stages in this order (a field left out takes the
//!   `generation_config.json` value where the file has one; a neutral value adds no stage):
//!
//! | order | stage | fields |
//! |---|---|---|
//! | 1 | `grammar(json_schema=…)` (plugin) | `response_format` |
//! | 2 | `logit_bias({id: bias})` | `logit_bias` |
//! | 3 | `penalty(repeat, frequency, presence, last_n)` | `repetition_penalty` / `repeat_penalty`, `frequency_penalty`, `presence_penalty`, `repeat_last_n` (default: the whole history, prompt included) |
//! | 4 | `dry(…)` (plugin) | `dry_multiplier`, `dry_base`, `dry_allowed_length`, `dry_penalty_last_n`, `dry_sequence_breakers` |
//! | 5 | `temp(t, range, exponent)` | `temperature`, `dynatemp_range`, `dynatemp_exponent` |
//! | 6 | `top_k(k)` | `top_k` |
//! | 7 | `top_n_sigma(n)` (plugin) | `top_n_sigma` |
//! | 8 | `typical(p, min_keep)` | `typical_p`, `min_keep` |
//! | 9 | `top_p(p, min_keep)` | `top_p`, `min_keep` |
//! | 10 | `min_p(p, min_keep)` | `min_p`, `min_keep` |
//! | 11 | `xtc(threshold, probability, min_keep)` | `xtc_threshold`, `xtc_probability` |
//! | 12 | selector: `greedy` when the temperature is 0 (or `do_sample` is false and no temperature is given), `mirostat(tau, eta)` / `mirostat_v2(tau, eta)` for `mirostat` 1 / 2, else `dist` | `temperature`, `mirostat`, `mirostat_tau`, `mirostat_eta` |
//!
//! Stages 1–5 then the truncations 6–11 is transformers' order (penalties, temperature,
//! top-k, top-p, min-p), the order [`generation_pipeline`] gives `generation_config.json` too.
//! With greedy or mirostat selection the truncations 6–11 are left out (they could not change
//! a greedy choice; mirostat does its own truncation, as llama.cpp's does).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use sieve_core::Registry;
use sieve_dsl::{Diagnostic, Parsed};

use crate::GenerationConfig;

mod fields;

pub use fields::{from_fields, Fields, FieldsError, OutputFormat};

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
    use sieve_core::Value;
    use sieve_dsl::PipelineSpec;

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

    /// The built-ins, and stand-ins for the plugin stages the fields use (`dry`, `grammar`,
    /// `top_n_sigma`: never built here), with the plugins' parameter names.
    fn registry() -> Registry {
        use sieve_core::{ParamKind, ParamSpec, Sampler, StageEntry, StageInfo};
        let mut registry = sieve_samplers::builtin_registry();
        let param = |name: &str, kind: ParamKind, default: Value| {
            let mut p = ParamSpec::new(name, kind, "");
            p.default = Some(default);
            p
        };
        let plugins = [
            (
                "dry",
                vec![
                    param("multiplier", ParamKind::Float, Value::Float(0.0)),
                    param("base", ParamKind::Float, Value::Float(1.75)),
                    param("allowed_length", ParamKind::Int, Value::Int(2)),
                    param("last_n", ParamKind::Int, Value::Int(-1)),
                    param("breakers", ParamKind::List, Value::List(vec![])),
                ],
            ),
            (
                "grammar",
                vec![param(
                    "json_schema",
                    ParamKind::Str,
                    Value::Str(String::new()),
                )],
            ),
            (
                "top_n_sigma",
                vec![param("n", ParamKind::Float, Value::Float(1.0))],
            ),
        ];
        for (name, params) in plugins {
            let info = StageInfo {
                name: name.to_string(),
                doc: String::new(),
                params,
                selector: false,
                aliases: vec![],
                origin: "test".to_string(),
                plugin: None,
            };
            let build = |_: &sieve_core::Args,
                         _: &sieve_core::BuildContext<'_>|
             -> Result<Box<dyn Sampler>, sieve_core::Error> {
                unreachable!("never built")
            };
            registry.register(StageEntry::new(info, build)).unwrap();
        }
        registry
    }

    fn fields(json: serde_json::Value) -> Fields {
        let mut f = Fields::default();
        let o = json.as_object().unwrap();
        let float = |k: &str| o.get(k).map(|v| v.as_f64().unwrap());
        let int = |k: &str| o.get(k).map(|v| v.as_i64().unwrap());
        f.temperature = float("temperature");
        f.top_p = float("top_p");
        f.top_k = int("top_k");
        f.min_p = float("min_p");
        f.typical_p = float("typical_p");
        f.frequency_penalty = float("frequency_penalty");
        f.repeat_penalty = float("repeat_penalty");
        f.repeat_last_n = int("repeat_last_n");
        f.xtc_probability = float("xtc_probability");
        f.dry_multiplier = float("dry_multiplier");
        f.dry_sequence_breakers = o.get("dry_sequence_breakers").map(|v| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        });
        f.top_n_sigma = float("top_n_sigma");
        f.mirostat = int("mirostat").map(|m| m as u8);
        f.logit_bias = o.get("logit_bias").map(|m| {
            m.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
                .collect()
        });
        f.response_format = o.get("json_schema").cloned().map(OutputFormat::Json);
        f
    }

    /// The spec `json`'s fields make, checked to be the pipeline `text` writes out; its
    /// canonical text.
    fn same(json: serde_json::Value, generation: &GenerationConfig, text: &str) -> String {
        let registry = registry();
        let spec = from_fields(&fields(json.clone()), generation, &registry).unwrap();
        let written = PipelineSpec::parse(text, &registry).unwrap();
        assert_eq!(spec, written, "{json}");
        assert_eq!(spec.to_string(), written.to_string());
        spec.to_string()
    }

    #[test]
    fn fields_become_stages_in_the_documented_order() {
        let none = GenerationConfig::default();
        same(
            serde_json::json!({
                "min_p": 0.05, "top_p": 0.9, "top_k": 40, "temperature": 0.7,
                "frequency_penalty": 0.5, "logit_bias": {"13": -100, "7": 2.5},
                "dry_multiplier": 0.8, "typical_p": 0.95, "xtc_probability": 0.5,
                "dry_sequence_breakers": ["\n", "\""], "json_schema": {"type": "object"},
                "top_n_sigma": 1.5,
            }),
            &none,
            "grammar(json_schema=\"{\\\"type\\\":\\\"object\\\"}\") | \
             logit_bias({13: -100.0, 7: 2.5}) | \
             penalty(repeat=1.0, frequency=0.5, presence=0.0, last_n=4294967295) | \
             dry(multiplier=0.8, breakers=[\"\\n\", \"\\\"\"]) | temp(0.7) | top_k(40) | \
             top_n_sigma(1.5) | typical(0.95, min_keep=1) | top_p(0.9, min_keep=1) | \
             min_p(0.05, min_keep=1) | xtc(threshold=0.1, probability=0.5, min_keep=1) | dist",
        );
        assert_eq!(
            same(
                serde_json::json!({"temperature": 0, "top_k": 5}),
                &none,
                "greedy"
            ),
            "greedy"
        );
        same(
            serde_json::json!({"mirostat": 2, "top_k": 5, "temperature": 0.8}),
            &none,
            "temp(0.8) | mirostat_v2(tau=5.0, eta=0.1)",
        );
        assert_eq!(
            same(
                serde_json::json!({"repeat_penalty": 1.1, "repeat_last_n": 64}),
                &none,
                "penalty(repeat=1.1, frequency=0.0, presence=0.0, last_n=64) | dist",
            ),
            "penalty(repeat=1.1, frequency=0.0, presence=0.0, last_n=64) | dist(seed=-1)"
        );
    }

    #[test]
    fn generation_config_fills_what_the_request_leaves_out() {
        let mut g = GenerationConfig {
            temperature: Some(0.6),
            top_p: Some(0.9),
            ..GenerationConfig::default()
        };
        let top_k = serde_json::json!({"top_k": 10});
        same(
            top_k.clone(),
            &g,
            "temp(0.6) | top_k(10) | top_p(0.9, min_keep=1) | dist",
        );
        g.do_sample = Some(false);
        same(top_k, &g, "greedy");
        assert!(!Fields::default().sets_any());
        assert!(fields(serde_json::json!({"top_k": 10})).sets_any());
    }

    #[test]
    fn bad_values_and_missing_plugins_name_their_field() {
        let builtins = sieve_samplers::builtin_registry();
        let none = GenerationConfig::default();
        for (f, registry, field) in [
            (
                serde_json::json!({"temperature": -1}),
                &builtins,
                "temperature",
            ),
            (serde_json::json!({"top_p": 1.5}), &builtins, "top_p"),
            (serde_json::json!({"top_k": -2}), &builtins, "top_k"),
            (
                serde_json::json!({"logit_bias": {"x": 1}}),
                &builtins,
                "logit_bias",
            ),
            (
                serde_json::json!({"logit_bias": {"1": 101}}),
                &builtins,
                "logit_bias",
            ),
            (
                serde_json::json!({"top_n_sigma": 1.0}),
                &builtins,
                "top_n_sigma",
            ),
            (
                serde_json::json!({"dry_multiplier": 0.8}),
                &builtins,
                "dry_multiplier",
            ),
            (
                serde_json::json!({"json_schema": {}}),
                &builtins,
                "response_format",
            ),
            (
                serde_json::json!({"repeat_last_n": -5, "repeat_penalty": 1.1}),
                &builtins,
                "repeat_last_n",
            ),
            (serde_json::json!({"mirostat": 3}), &builtins, "mirostat"),
        ] {
            match from_fields(&fields(f.clone()), &none, registry) {
                Err(FieldsError::Field { field: got, .. }) => assert_eq!(got, field, "{f}"),
                other => panic!("{f}: {other:?}"),
            }
        }
    }

    #[test]
    fn random_seeds_fit_in_53_bits_and_differ() {
        let seeds: Vec<u64> = (0..8).map(|_| random_seed()).collect();
        assert!(seeds.iter().all(|&s| s < 1 << 53));
        assert!(seeds.windows(2).any(|w| w[0] != w[1]), "{seeds:?}");
    }
}
