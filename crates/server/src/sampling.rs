//! Request fields → a sieve pipeline.
//!
//! - `sampler` (a pipeline string, or a list of stage objects) is used as written and
//!   overrides every other sampling field (`response_format` and `logit_bias` included).
//! - A request that sets no sampling field runs the server's default pipeline: `--sampler`,
//!   else the one `generation_config.json` gives, else sieve's fallback — exactly what
//!   `sieve generate` runs without `--sampler`, so one seed gives one text everywhere.
//! - Otherwise the fields become stages in this order (a field left out takes the
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
//! top-k, top-p, min-p), the order `sieve generate` gives `generation_config.json` too. With
//! greedy or mirostat selection the truncations 6–11 are left out (they could not change a
//! greedy choice; mirostat does its own truncation, as llama.cpp's does).

use sieve_core::Value;
use sieve_dsl::PipelineSource;
use sieve_text::GenerationConfig;

use crate::openai::fields::{ResponseFormat, SamplerField, SamplingFields};
use crate::{Error, Result};

/// The pipeline a request runs when it sets no sampling field, and the generation
/// defaults behind the others.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// The default pipeline (`--sampler`, else `generation_config.json`'s, else the fallback).
    pub pipeline: String,
    /// `generation_config.json`.
    pub generation: GenerationConfig,
}

/// Which stages the server loaded (the plugins may be missing).
pub trait Stages {
    /// Whether a stage of this name can be built.
    fn has(&self, name: &str) -> bool;

    /// The canonical text of a pipeline given as a list of stage objects.
    ///
    /// # Errors
    /// [`Error::Sampler`] naming the stage at fault.
    fn list_text(&self, list: &[serde_json::Value]) -> Result<String>;
}

impl Stages for sieve_core::Registry {
    fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    fn list_text(&self, list: &[serde_json::Value]) -> Result<String> {
        let source: PipelineSource =
            serde_json::from_value(serde_json::Value::Array(list.to_vec()))
                .map_err(|e| Error::Sampler(e.to_string()))?;
        let spec = source
            .resolve(self)
            .map_err(|e| Error::Sampler(e.to_string()))?;
        Ok(spec.to_string())
    }
}

/// The pipeline text the request's sampling fields ask for (see the [module](self) docs).
///
/// # Errors
/// [`Error::BadRequest`] naming the field for a value out of range, or a field whose stage
/// is a plugin the server did not load.
pub fn pipeline_text(
    fields: &SamplingFields,
    defaults: &Defaults,
    stages: &dyn Stages,
) -> Result<String> {
    match &fields.sampler {
        Some(SamplerField::Text(text)) => return Ok(text.clone()),
        Some(SamplerField::Stages(list)) => return stages.list_text(list),
        None => {}
    }
    if !sets_any(fields) {
        return Ok(defaults.pipeline.clone());
    }
    let g = &defaults.generation;
    let mut out: Vec<String> = Vec::new();
    let need = |name: &str, param: &str| -> Result<()> {
        if stages.has(name) {
            Ok(())
        } else {
            Err(Error::field(
                param,
                format!(
                    "`{param}` needs the `{name}` stage, which this server did not load \
                     (start it with --plugin PATH to the plugin that defines it)"
                ),
            ))
        }
    };

    match &fields.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(format) => {
            need("grammar", "response_format")?;
            let schema = match format {
                ResponseFormat::JsonSchema { json_schema } => json_schema
                    .schema
                    .clone()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                _ => serde_json::json!({"type": "object"}),
            };
            out.push(format!(
                "grammar(json_schema={})",
                Value::Str(schema.to_string())
            ));
        }
    }

    if let Some(bias) = fields.logit_bias.as_ref().filter(|b| !b.is_empty()) {
        let mut entries = Vec::with_capacity(bias.len());
        for (key, &value) in bias {
            let id: u32 = key.parse().map_err(|_| {
                Error::field(
                    "logit_bias",
                    format!("`{key}` is not a token id (logit_bias maps token ids to biases)"),
                )
            })?;
            in_range("logit_bias", value, -100.0, 100.0)?;
            entries.push(format!("{id}: {value:?}"));
        }
        out.push(format!("logit_bias({{{}}})", entries.join(", ")));
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
        out.push(format!(
            "penalty(repeat={repeat:?}, frequency={frequency:?}, presence={presence:?}, \
             last_n={last_n})"
        ));
    }

    if let Some(multiplier) = fields.dry_multiplier.filter(|&m| m != 0.0) {
        need("dry", "dry_multiplier")?;
        in_range("dry_multiplier", multiplier, 0.0, f64::MAX)?;
        let mut args = vec![format!("multiplier={multiplier:?}")];
        if let Some(base) = fields.dry_base {
            in_range("dry_base", base, 1.0, f64::MAX)?;
            args.push(format!("base={base:?}"));
        }
        if let Some(n) = fields.dry_allowed_length {
            args.push(format!("allowed_length={n}"));
        }
        if let Some(n) = fields.dry_penalty_last_n {
            if n < -1 {
                return Err(Error::field("dry_penalty_last_n", "must be -1 or more"));
            }
            args.push(format!("last_n={n}"));
        }
        if let Some(breakers) = &fields.dry_sequence_breakers {
            let list: Vec<String> = breakers
                .iter()
                .map(|b| Value::Str(b.clone()).to_string())
                .collect();
            args.push(format!("breakers=[{}]", list.join(", ")));
        }
        out.push(format!("dry({})", args.join(", ")));
    }

    let greedy_default = g.do_sample == Some(false) && fields.temperature.is_none();
    let t = fields.temperature.or(g.temperature).unwrap_or(1.0);
    in_range("temperature", t, 0.0, f64::MAX)?;
    let greedy = t == 0.0 || greedy_default;
    let mirostat = fields.mirostat.unwrap_or(0);
    if mirostat > 2 {
        return Err(Error::field("mirostat", "0 (off), 1 or 2"));
    }
    if !greedy {
        let range = fields.dynatemp_range.unwrap_or(0.0);
        let exponent = fields.dynatemp_exponent.unwrap_or(1.0);
        in_range("dynatemp_range", range, 0.0, f64::MAX)?;
        in_range("dynatemp_exponent", exponent, 0.0, f64::MAX)?;
        if range != 0.0 || exponent != 1.0 {
            out.push(format!(
                "temp({t:?}, range={range:?}, exponent={exponent:?})"
            ));
        } else if t != 1.0 {
            out.push(format!("temp({t:?})"));
        }
    }

    let min_keep = fields.min_keep.unwrap_or(1).max(1);
    if !greedy && mirostat == 0 {
        let k = fields.top_k.or(g.top_k.map(|k| k as i64)).unwrap_or(0);
        if k < -1 {
            return Err(Error::field("top_k", "must be -1 (off), 0 (off) or more"));
        }
        if k > 0 {
            out.push(format!("top_k({k})"));
        }
        if let Some(n) = fields.top_n_sigma {
            need("top_n_sigma", "top_n_sigma")?;
            in_range("top_n_sigma", n, f64::MIN, f64::MAX)?;
            out.push(format!("top_n_sigma({n:?})"));
        }
        if let Some(p) = fields.typical_p {
            in_range("typical_p", p, 0.0, 1.0)?;
            if p < 1.0 {
                out.push(format!("typical({p:?}, min_keep={min_keep})"));
            }
        }
        let p = fields.top_p.or(g.top_p).unwrap_or(1.0);
        in_range("top_p", p, 0.0, 1.0)?;
        if p < 1.0 {
            out.push(format!("top_p({p:?}, min_keep={min_keep})"));
        }
        let p = fields.min_p.or(g.min_p).unwrap_or(0.0);
        in_range("min_p", p, 0.0, 1.0)?;
        if p > 0.0 {
            out.push(format!("min_p({p:?}, min_keep={min_keep})"));
        }
        let threshold = fields.xtc_threshold.unwrap_or(0.1);
        let probability = fields.xtc_probability.unwrap_or(0.0);
        in_range("xtc_threshold", threshold, 0.0, 1.0)?;
        in_range("xtc_probability", probability, 0.0, 1.0)?;
        if probability > 0.0 && threshold <= 0.5 {
            out.push(format!(
                "xtc(threshold={threshold:?}, probability={probability:?}, min_keep={min_keep})"
            ));
        }
    }

    out.push(if greedy {
        "greedy".to_string()
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
        format!("{name}(tau={tau:?}, eta={eta:?})")
    } else {
        "dist".to_string()
    });
    Ok(out.join(" | "))
}

/// Whether the request sets any sampling field (else it runs the server's default pipeline).
pub fn sets_any(f: &SamplingFields) -> bool {
    let SamplingFields {
        sampler,
        temperature,
        dynatemp_range,
        dynatemp_exponent,
        top_p,
        top_k,
        min_p,
        typical_p,
        min_keep,
        frequency_penalty,
        presence_penalty,
        repetition_penalty,
        repeat_penalty,
        repeat_last_n,
        logit_bias,
        xtc_threshold,
        xtc_probability,
        dry_multiplier,
        dry_base,
        dry_allowed_length,
        dry_penalty_last_n,
        dry_sequence_breakers,
        top_n_sigma,
        mirostat,
        mirostat_tau,
        mirostat_eta,
        response_format,
    } = f;
    let floats = [
        temperature,
        dynatemp_range,
        dynatemp_exponent,
        top_p,
        min_p,
        typical_p,
        frequency_penalty,
        presence_penalty,
        repetition_penalty,
        repeat_penalty,
        xtc_threshold,
        xtc_probability,
        dry_multiplier,
        dry_base,
        top_n_sigma,
        mirostat_tau,
        mirostat_eta,
    ];
    sampler.is_some()
        || floats.iter().any(|x| x.is_some())
        || top_k.is_some()
        || min_keep.is_some()
        || repeat_last_n.is_some()
        || logit_bias.is_some()
        || dry_allowed_length.is_some()
        || dry_penalty_last_n.is_some()
        || dry_sequence_breakers.is_some()
        || mirostat.is_some()
        || response_format.is_some()
}

/// A penalty window: -1 (or absent) is the whole history.
fn window(param: &str, n: Option<i64>) -> Result<u32> {
    match n {
        None | Some(-1) => Ok(u32::MAX),
        Some(n) => u32::try_from(n)
            .map_err(|_| Error::field(param, format!("{n}: give -1 (all) or 0 to {}", u32::MAX))),
    }
}

fn in_range(param: &str, x: f64, lo: f64, hi: f64) -> Result<()> {
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
        Err(Error::field(param, format!("{x}: must be {bounds}")))
    }
}

fn positive(param: &str, x: f64) -> Result<()> {
    if x.is_finite() && x > 0.0 {
        Ok(())
    } else {
        Err(Error::field(param, format!("{x}: must be more than 0")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Only(&'static [&'static str]);

    impl Stages for Only {
        fn has(&self, name: &str) -> bool {
            self.0.contains(&name)
        }

        fn list_text(&self, _: &[serde_json::Value]) -> Result<String> {
            Err(Error::Sampler("no registry".to_string()))
        }
    }

    fn defaults() -> Defaults {
        Defaults {
            pipeline: "top_k(40) | dist".to_string(),
            generation: GenerationConfig::default(),
        }
    }

    fn text(json: serde_json::Value) -> Result<String> {
        let fields: SamplingFields = serde_json::from_value(json).unwrap();
        pipeline_text(&fields, &defaults(), &Only(&["dry"]))
    }

    #[test]
    fn no_field_is_the_default_pipeline_and_sampler_wins() {
        assert_eq!(text(serde_json::json!({})).unwrap(), "top_k(40) | dist");
        assert_eq!(
            text(serde_json::json!({"sampler": "greedy", "temperature": 0.5})).unwrap(),
            "greedy"
        );
    }

    #[test]
    fn a_list_of_stage_objects_is_a_pipeline_too() {
        let registry = sieve_samplers::builtin_registry();
        let fields: SamplingFields = serde_json::from_value(serde_json::json!({
            "sampler": [{"stage": "top_k", "k": 5}, {"stage": "temp", "t": 0.5}],
            "temperature": 2.0,
        }))
        .unwrap();
        assert_eq!(
            pipeline_text(&fields, &defaults(), &registry).unwrap(),
            "top_k(k=5) | temp(t=0.5, range=0.0, exponent=1.0) | dist(seed=-1)"
        );
        let fields: SamplingFields =
            serde_json::from_value(serde_json::json!({"sampler": [{"stage": "top_q"}]})).unwrap();
        match pipeline_text(&fields, &defaults(), &registry) {
            Err(Error::Sampler(m)) => assert!(m.contains("stage 1 (`top_q`)"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fields_become_stages_in_the_documented_order() {
        let got = text(serde_json::json!({
            "min_p": 0.05, "top_p": 0.9, "top_k": 40, "temperature": 0.7,
            "frequency_penalty": 0.5, "logit_bias": {"13": -100, "7": 2.5},
            "dry_multiplier": 0.8, "typical_p": 0.95, "xtc_probability": 0.5,
        }))
        .unwrap();
        assert_eq!(
            got,
            "logit_bias({13: -100.0, 7: 2.5}) | \
             penalty(repeat=1.0, frequency=0.5, presence=0.0, last_n=4294967295) | \
             dry(multiplier=0.8) | temp(0.7) | top_k(40) | typical(0.95, min_keep=1) | \
             top_p(0.9, min_keep=1) | min_p(0.05, min_keep=1) | \
             xtc(threshold=0.1, probability=0.5, min_keep=1) | dist"
        );
        assert_eq!(
            text(serde_json::json!({"temperature": 0, "top_k": 5})).unwrap(),
            "greedy"
        );
        assert_eq!(
            text(serde_json::json!({"mirostat": 2, "top_k": 5, "temperature": 0.8})).unwrap(),
            "temp(0.8) | mirostat_v2(tau=5.0, eta=0.1)"
        );
        assert_eq!(
            text(serde_json::json!({"repeat_penalty": 1.1, "repeat_last_n": 64})).unwrap(),
            "penalty(repeat=1.1, frequency=0.0, presence=0.0, last_n=64) | dist"
        );
    }

    #[test]
    fn generation_config_fills_what_the_request_leaves_out() {
        let mut d = defaults();
        d.generation.temperature = Some(0.6);
        d.generation.top_p = Some(0.9);
        let fields: SamplingFields =
            serde_json::from_value(serde_json::json!({"top_k": 10})).unwrap();
        assert_eq!(
            pipeline_text(&fields, &d, &Only(&[])).unwrap(),
            "temp(0.6) | top_k(10) | top_p(0.9, min_keep=1) | dist"
        );
        d.generation.do_sample = Some(false);
        assert_eq!(pipeline_text(&fields, &d, &Only(&[])).unwrap(), "greedy");
    }

    #[test]
    fn bad_values_name_their_field() {
        for (json, param) in [
            (serde_json::json!({"temperature": -1}), "temperature"),
            (serde_json::json!({"top_p": 1.5}), "top_p"),
            (serde_json::json!({"top_k": -2}), "top_k"),
            (serde_json::json!({"logit_bias": {"x": 1}}), "logit_bias"),
            (serde_json::json!({"logit_bias": {"1": 101}}), "logit_bias"),
            (serde_json::json!({"top_n_sigma": 1.0}), "top_n_sigma"),
            (
                serde_json::json!({"response_format": {"type": "json_object"}}),
                "response_format",
            ),
            (
                serde_json::json!({"repeat_last_n": -5, "repeat_penalty": 1.1}),
                "repeat_last_n",
            ),
            (serde_json::json!({"mirostat": 3}), "mirostat"),
        ] {
            match text(json.clone()) {
                Err(Error::BadRequest { param: Some(p), .. }) => assert_eq!(p, param, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
    }
}
