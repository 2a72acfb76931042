//! The one mapping of an OpenAI-style request's sampling fields onto a pipeline
//! ([`from_fields`]; the order of the stages is in the [module](super) docs).

use std::collections::BTreeMap;

use serde::Deserialize;
use sieve_core::{Registry, Value};
use sieve_dsl::{PipelineSource, PipelineSpec, SourceError, StageSpec};

use crate::GenerationConfig;

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
/// is named as in the request; see the [module](crate::sampling) docs for the stage each one makes.
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

/// The pipeline a request's sampling fields ask for (see the [module](crate::sampling) docs for the
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
