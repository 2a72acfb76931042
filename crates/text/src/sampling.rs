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
use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use sieve_core::{Registry, Value};
use sieve_dsl::{Diagnostic, Parsed, PipelineSource, PipelineSpec, SourceError, StageSpec};

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

/// What a request's `response_format` asks of the output. Read from OpenAI's shape:
/// `{"type": "text"}`, `{"type": "json_object"}` or `{"type": "json_schema", "json_schema":
/// {"name", "schema"}}` (a missing schema is any object).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "ResponseFormat")]
pub enum OutputFormat {
    /// `{"type": "text"}`: no constraint.
    Text,
    /// JSON matching this schema (`{"type": "object"}` for `{"type": "json_object"}`), through
    /// the `grammar` plugin.
    Json(serde_json::Value),
}

/// `response_format` as OpenAI's clients send it.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseFormat {
    /// No constraint.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// `{"name", "schema", "strict"}`.
        json_schema: JsonSchemaFormat,
    },
}

/// The `json_schema` of a `response_format` (its `name` and `strict` are not used).
#[derive(Debug, Clone, Deserialize)]
struct JsonSchemaFormat {
    /// The JSON schema.
    #[serde(default)]
    schema: Option<serde_json::Value>,
}

impl From<ResponseFormat> for OutputFormat {
    fn from(format: ResponseFormat) -> Self {
        let object = || serde_json::json!({"type": "object"});
        match format {
            ResponseFormat::Text => OutputFormat::Text,
            ResponseFormat::JsonObject => OutputFormat::Json(object()),
            ResponseFormat::JsonSchema { json_schema } => {
                OutputFormat::Json(json_schema.schema.unwrap_or_else(object))
            }
        }
    }
}

/// The sampling fields of an OpenAI-style request (OpenAI's and the usual extras of vLLM and
/// llama.cpp), without the transport: what [`from_fields`] turns into a pipeline. Each field
/// is named as in the request; see the [module](self) docs for the stage each one makes.
/// Deserializes from a request body (unknown fields ignored, missing ones `None`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Fields {
    /// `temp(t)`; 0 selects greedily.
    pub temperature: Option<f64>,
    /// llama.cpp's dynamic temperature: `temp(range=…)`.
    pub dynatemp_range: Option<f64>,
    /// llama.cpp's dynamic temperature: `temp(exponent=…)`.
    pub dynatemp_exponent: Option<f64>,
    /// `top_p(p)`; 1 is off.
    pub top_p: Option<f64>,
    /// `top_k(k)`; 0 and -1 are off.
    pub top_k: Option<i64>,
    /// `min_p(p)`; 0 is off.
    pub min_p: Option<f64>,
    /// `typical(p)`; 1 is off.
    pub typical_p: Option<f64>,
    /// The `min_keep` of `top_p`, `min_p`, `typical` and `xtc`.
    pub min_keep: Option<u32>,
    /// `penalty(frequency=…)`.
    pub frequency_penalty: Option<f64>,
    /// `penalty(presence=…)`.
    pub presence_penalty: Option<f64>,
    /// `penalty(repeat=…)` (transformers' and vLLM's name).
    pub repetition_penalty: Option<f64>,
    /// `penalty(repeat=…)` (llama.cpp's name).
    pub repeat_penalty: Option<f64>,
    /// `penalty(last_n=…)`: the window of the penalties; -1 is the whole history.
    pub repeat_last_n: Option<i64>,
    /// `logit_bias({id: bias})`: token id (as a string) → bias in [-100, 100].
    pub logit_bias: Option<BTreeMap<String, f64>>,
    /// `xtc(threshold=…)`.
    pub xtc_threshold: Option<f64>,
    /// `xtc(probability=…)`; 0 is off.
    pub xtc_probability: Option<f64>,
    /// `dry(multiplier=…)` (the `dry` plugin); 0 is off.
    pub dry_multiplier: Option<f64>,
    /// `dry(base=…)`.
    pub dry_base: Option<f64>,
    /// `dry(allowed_length=…)`.
    pub dry_allowed_length: Option<u32>,
    /// `dry(last_n=…)`; -1 is the whole history.
    pub dry_penalty_last_n: Option<i64>,
    /// `dry(breakers=[…])`.
    pub dry_sequence_breakers: Option<Vec<String>>,
    /// `top_n_sigma(n)` (the `top_n_sigma` plugin).
    pub top_n_sigma: Option<f64>,
    /// 1: `mirostat(tau, eta)`, 2: `mirostat_v2(tau, eta)` as the selector; 0 is off.
    pub mirostat: Option<u8>,
    /// Mirostat's target surprise τ.
    pub mirostat_tau: Option<f64>,
    /// Mirostat's learning rate η.
    pub mirostat_eta: Option<f64>,
    /// `response_format`: `grammar(json_schema=…)` (the `grammar` plugin) for JSON.
    pub response_format: Option<OutputFormat>,
}

impl Fields {
    /// Whether any field is set (a request that sets none runs the default pipeline).
    pub fn sets_any(&self) -> bool {
        *self != Fields::default()
    }
}

/// Why a request's sampling fields make no pipeline.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FieldsError {
    /// A field's value is out of range, or its stage is a plugin the registry lacks.
    #[error("`{field}`: {message}")]
    Field {
        /// The request field at fault, as the request names it.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The stages the fields make do not validate against the registry's schemas (a plugin
    /// stage whose parameters differ from the ones the fields fill).
    #[error("{0}")]
    Pipeline(SourceError),
}

impl FieldsError {
    fn field(field: &'static str, message: impl Into<String>) -> Self {
        FieldsError::Field {
            field,
            message: message.into(),
        }
    }
}

/// The pipeline a request's sampling fields ask for (see the [module](self) docs for the
/// order), filled from `generation` where a field is left out, built as typed stages and
/// validated against `registry` as text would be ([`PipelineSource::stages`]): no text is
/// formatted or parsed. The spec's canonical text is that of the pipeline written out.
///
/// # Errors
/// [`FieldsError::Field`] naming the field for a value out of range, or a field whose stage
/// is a plugin `registry` lacks; [`FieldsError::Pipeline`] when the stages do not validate.
pub fn from_fields(
    fields: &Fields,
    generation: &GenerationConfig,
    registry: &Registry,
) -> Result<PipelineSpec, FieldsError> {
    let stages = field_stages(fields, generation, |name| registry.get(name).is_some())?;
    PipelineSource::stages(stages)
        .resolve(registry)
        .map_err(FieldsError::Pipeline)
}

/// A stage with its arguments by name.
fn stage(name: &str, args: Vec<(&str, Value)>) -> StageSpec {
    StageSpec {
        name: name.to_string(),
        args: args.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
    }
}

/// The stages of [`from_fields`], in the documented order; `has` says which stages exist.
fn field_stages(
    fields: &Fields,
    g: &GenerationConfig,
    has: impl Fn(&str) -> bool,
) -> Result<Vec<StageSpec>, FieldsError> {
    use Value::{Float, Int, Str};
    let mut out = Vec::new();
    let need = |name: &str, param: &'static str| -> Result<(), FieldsError> {
        if has(name) {
            Ok(())
        } else {
            Err(FieldsError::field(
                param,
                format!(
                    "`{param}` needs the `{name}` stage, which this server did not load \
                     (start it with --plugin PATH to the plugin that defines it)"
                ),
            ))
        }
    };

    if let Some(OutputFormat::Json(schema)) = &fields.response_format {
        need("grammar", "response_format")?;
        out.push(stage(
            "grammar",
            vec![("json_schema", Str(schema.to_string()))],
        ));
    }

    if let Some(bias) = fields.logit_bias.as_ref().filter(|b| !b.is_empty()) {
        let mut entries = Vec::with_capacity(bias.len());
        for (key, &value) in bias {
            let id: u32 = key.parse().map_err(|_| {
                FieldsError::field(
                    "logit_bias",
                    format!("`{key}` is not a token id (logit_bias maps token ids to biases)"),
                )
            })?;
            in_range("logit_bias", value, -100.0, 100.0)?;
            entries.push((Int(i64::from(id)), Float(value)));
        }
        out.push(stage("logit_bias", vec![("biases", Value::Map(entries))]));
    }

    let repeat = fields
        .repetition_penalty
        .or(fields.repeat_penalty)
        .or(g.repetition_penalty)
        .unwrap_or(1.0);
    let frequency = fields.frequency_penalty.unwrap_or(0.0);
    let presence = fields.presence_penalty.unwrap_or(0.0);
    positive("repetition_penalty", repeat)?;
    in_range("frequency_penalty", frequency, -2.0, 2.0)?;
    in_range("presence_penalty", presence, -2.0, 2.0)?;
    if repeat != 1.0 || frequency != 0.0 || presence != 0.0 {
        let last_n = window("repeat_last_n", fields.repeat_last_n)?;
        out.push(stage(
            "penalty",
            vec![
                ("repeat", Float(repeat)),
                ("frequency", Float(frequency)),
                ("presence", Float(presence)),
                ("last_n", Int(i64::from(last_n))),
            ],
        ));
    }

    if let Some(multiplier) = fields.dry_multiplier.filter(|&m| m != 0.0) {
        need("dry", "dry_multiplier")?;
        in_range("dry_multiplier", multiplier, 0.0, f64::MAX)?;
        let mut args = vec![("multiplier", Float(multiplier))];
        if let Some(base) = fields.dry_base {
            in_range("dry_base", base, 1.0, f64::MAX)?;
            args.push(("base", Float(base)));
        }
        if let Some(n) = fields.dry_allowed_length {
            args.push(("allowed_length", Int(i64::from(n))));
        }
        if let Some(n) = fields.dry_penalty_last_n {
            if n < -1 {
                return Err(FieldsError::field(
                    "dry_penalty_last_n",
                    "must be -1 or more",
                ));
            }
            args.push(("last_n", Int(n)));
        }
        if let Some(breakers) = &fields.dry_sequence_breakers {
            let list = breakers.iter().map(|b| Str(b.clone())).collect();
            args.push(("breakers", Value::List(list)));
        }
        out.push(stage("dry", args));
    }

    let greedy_default = g.do_sample == Some(false) && fields.temperature.is_none();
    let t = fields.temperature.or(g.temperature).unwrap_or(1.0);
    in_range("temperature", t, 0.0, f64::MAX)?;
    let greedy = t == 0.0 || greedy_default;
    let mirostat = fields.mirostat.unwrap_or(0);
    if mirostat > 2 {
        return Err(FieldsError::field("mirostat", "0 (off), 1 or 2"));
    }
    if !greedy {
        let range = fields.dynatemp_range.unwrap_or(0.0);
        let exponent = fields.dynatemp_exponent.unwrap_or(1.0);
        in_range("dynatemp_range", range, 0.0, f64::MAX)?;
        in_range("dynatemp_exponent", exponent, 0.0, f64::MAX)?;
        if range != 0.0 || exponent != 1.0 {
            out.push(stage(
                "temp",
                vec![
                    ("t", Float(t)),
                    ("range", Float(range)),
                    ("exponent", Float(exponent)),
                ],
            ));
        } else if t != 1.0 {
            out.push(stage("temp", vec![("t", Float(t))]));
        }
    }

    let min_keep = Int(i64::from(fields.min_keep.unwrap_or(1).max(1)));
    if !greedy && mirostat == 0 {
        let k = fields.top_k.or(g.top_k.map(|k| k as i64)).unwrap_or(0);
        if k < -1 {
            return Err(FieldsError::field(
                "top_k",
                "must be -1 (off), 0 (off) or more",
            ));
        }
        if k > 0 {
            out.push(stage("top_k", vec![("k", Int(k))]));
        }
        if let Some(n) = fields.top_n_sigma {
            need("top_n_sigma", "top_n_sigma")?;
            in_range("top_n_sigma", n, f64::MIN, f64::MAX)?;
            out.push(stage("top_n_sigma", vec![("n", Float(n))]));
        }
        if let Some(p) = fields.typical_p {
            in_range("typical_p", p, 0.0, 1.0)?;
            if p < 1.0 {
                out.push(stage(
                    "typical",
                    vec![("p", Float(p)), ("min_keep", min_keep.clone())],
                ));
            }
        }
        let p = fields.top_p.or(g.top_p).unwrap_or(1.0);
        in_range("top_p", p, 0.0, 1.0)?;
        if p < 1.0 {
            out.push(stage(
                "top_p",
                vec![("p", Float(p)), ("min_keep", min_keep.clone())],
            ));
        }
        let p = fields.min_p.or(g.min_p).unwrap_or(0.0);
        in_range("min_p", p, 0.0, 1.0)?;
        if p > 0.0 {
            out.push(stage(
                "min_p",
                vec![("p", Float(p)), ("min_keep", min_keep.clone())],
            ));
        }
        let threshold = fields.xtc_threshold.unwrap_or(0.1);
        let probability = fields.xtc_probability.unwrap_or(0.0);
        in_range("xtc_threshold", threshold, 0.0, 1.0)?;
        in_range("xtc_probability", probability, 0.0, 1.0)?;
        if probability > 0.0 && threshold <= 0.5 {
            out.push(stage(
                "xtc",
                vec![
                    ("threshold", Float(threshold)),
                    ("probability", Float(probability)),
                    ("min_keep", min_keep),
                ],
            ));
        }
    }

    out.push(if greedy {
        stage("greedy", vec![])
    } else if mirostat > 0 {
        let tau = fields.mirostat_tau.unwrap_or(5.0);
        let eta = fields.mirostat_eta.unwrap_or(0.1);
        in_range("mirostat_tau", tau, 0.0, f64::MAX)?;
        in_range("mirostat_eta", eta, 0.0, f64::MAX)?;
        let name = if mirostat == 1 {
            "mirostat"
        } else {
            "mirostat_v2"
        };
        stage(name, vec![("tau", Float(tau)), ("eta", Float(eta))])
    } else {
        stage("dist", vec![])
    });
    Ok(out)
}

/// A penalty window: -1 (or absent) is the whole history.
fn window(param: &'static str, n: Option<i64>) -> Result<u32, FieldsError> {
    match n {
        None | Some(-1) => Ok(u32::MAX),
        Some(n) => u32::try_from(n).map_err(|_| {
            FieldsError::field(param, format!("{n}: give -1 (all) or 0 to {}", u32::MAX))
        }),
    }
}

fn in_range(param: &'static str, x: f64, lo: f64, hi: f64) -> Result<(), FieldsError> {
    if x.is_finite() && x >= lo && x <= hi {
        Ok(())
    } else {
        let bounds = if hi == f64::MAX {
            format!("{lo:?} or more")
        } else if lo == f64::MIN {
            "a finite number".to_string()
        } else {
            format!("between {lo:?} and {hi:?}")
        };
        Err(FieldsError::field(param, format!("{x}: must be {bounds}")))
    }
}

fn positive(param: &'static str, x: f64) -> Result<(), FieldsError> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(FieldsError::field(
            param,
            format!("{x}: must be more than 0"),
        ))
    }
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
