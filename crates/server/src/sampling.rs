//! Request fields → a sieve pipeline: `sampler` as written (text, parsed once, or a list of
//! stage objects), the server's default pipeline (parsed once at startup) for a request that
//! sets no sampling field, else the OpenAI fields mapped by
//! [`sieve_text::sampling::from_fields`] (its docs give the order and behaviour), with a 400
//! naming the field at fault.

use sieve_core::Registry;
use sieve_dsl::{Parsed, PipelineSource, PipelineSpec};
use sieve_text::sampling::{self, FieldsError};
use sieve_text::GenerationConfig;

use crate::openai::fields::{SamplerField, SamplingFields};
use crate::{Error, Result};

/// The pipeline a request runs when it sets no sampling field, and the generation
/// defaults behind the others.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// The default pipeline (`--sampler`, else `generation_config.json`'s, else the
    /// fallback), parsed once at startup ([`sieve_text::sampling::default_pipeline`]).
    pub pipeline: Parsed,
    /// `generation_config.json`.
    pub generation: GenerationConfig,
}

/// Which stages the server loaded (the plugins may be missing).
pub trait Stages {
    /// Whether a stage of this name can be built.
    fn has(&self, name: &str) -> bool;
}

impl Stages for Registry {
    fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// The pipeline a request's sampling fields choose.
#[derive(Debug)]
pub enum Chosen<'a> {
    /// The server's default pipeline (no sampling field set), parsed at startup.
    Default(&'a Parsed),
    /// `sampler` given as text, parsed once.
    Text(Parsed),
    /// `sampler` given as a list of stage objects, or the OpenAI fields: typed stages, never
    /// text.
    Stages(PipelineSpec),
}

impl Chosen<'_> {
    /// The validated, canonical spec.
    pub fn spec(&self) -> &PipelineSpec {
        match self {
            Chosen::Default(parsed) => parsed.spec(),
            Chosen::Text(parsed) => parsed.spec(),
            Chosen::Stages(spec) => spec,
        }
    }
}

/// The pipeline the request's sampling fields ask for (see the [module](self) docs); no
/// text is parsed unless the request's `sampler` is text.
///
/// # Errors
/// [`Error::Sampler`] for a `sampler` that does not validate; [`Error::BadRequest`] naming
/// the field for a value out of range, or a field whose stage is a plugin the server did not
/// load.
pub fn choose<'a>(
    fields: &SamplingFields,
    defaults: &'a Defaults,
    registry: &Registry,
) -> Result<Chosen<'a>> {
    match &fields.sampler {
        Some(SamplerField::Text(text)) => {
            return Parsed::parse(text, registry)
                .map(Chosen::Text)
                .map_err(|d| Error::Sampler(d.render(text)));
        }
        Some(SamplerField::Stages(list)) => {
            let source: PipelineSource =
                serde_json::from_value(serde_json::Value::Array(list.clone()))
                    .map_err(|e| Error::Sampler(e.to_string()))?;
            return source
                .resolve(registry)
                .map(Chosen::Stages)
                .map_err(|e| Error::Sampler(e.to_string()));
        }
        None => {}
    }
    if !fields.fields.sets_any() {
        return Ok(Chosen::Default(&defaults.pipeline));
    }
    match sampling::from_fields(&fields.fields, &defaults.generation, registry) {
        Ok(spec) => Ok(Chosen::Stages(spec)),
        Err(FieldsError::Field { field, message }) => Err(Error::field(field, message)),
        Err(FieldsError::Pipeline(e)) => Err(Error::BadRequest {
            message: format!(
                "the request's sampling fields make a pipeline that does not build:\n{e}"
            ),
            param: None,
        }),
    }
}

/// Whether the request sets any sampling field (else it runs the server's default pipeline).
pub fn sets_any(f: &SamplingFields) -> bool {
    f.sampler.is_some() || f.fields.sets_any()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::JsonBody;

    fn defaults(registry: &Registry) -> Defaults {
        Defaults {
            pipeline: Parsed::parse("top_k(40) | dist", registry).unwrap(),
            generation: GenerationConfig::default(),
        }
    }

    /// The canonical text of the pipeline the request `json` chooses.
    fn text(json: serde_json::Value) -> Result<String> {
        let registry = sieve_samplers::builtin_registry();
        let fields = JsonBody(json).sampling().unwrap();
        let defaults = defaults(&registry);
        Ok(choose(&fields, &defaults, &registry)?.spec().to_string())
    }

    /// The canonical text of `text`.
    fn canonical(text: &str) -> String {
        let registry = sieve_samplers::builtin_registry();
        PipelineSpec::parse(text, &registry).unwrap().to_string()
    }

    #[test]
    fn no_field_is_the_default_pipeline_and_sampler_wins() {
        let registry = sieve_samplers::builtin_registry();
        let defaults = defaults(&registry);
        let fields = SamplingFields::default();
        assert!(matches!(
            choose(&fields, &defaults, &registry).unwrap(),
            Chosen::Default(p) if std::ptr::eq(p, &defaults.pipeline)
        ));
        assert_eq!(
            text(serde_json::json!({})).unwrap(),
            canonical("top_k(40) | dist")
        );
        assert_eq!(
            text(serde_json::json!({"sampler": "greedy", "temperature": 0.5})).unwrap(),
            "greedy"
        );
        assert_eq!(
            text(serde_json::json!({"response_format": {"type": "text"}})).unwrap(),
            "dist(seed=-1)",
            "a request that names the text format sets a sampling field"
        );
    }

    #[test]
    fn a_list_of_stage_objects_is_a_pipeline_too() {
        assert_eq!(
            text(serde_json::json!({
                "sampler": [{"stage": "top_k", "k": 5}, {"stage": "temp", "t": 0.5}],
                "temperature": 2.0,
            }))
            .unwrap(),
            "top_k(k=5) | temp(t=0.5, range=0.0, exponent=1.0) | dist(seed=-1)"
        );
        match text(serde_json::json!({"sampler": [{"stage": "top_q"}]})) {
            Err(Error::Sampler(m)) => assert!(m.contains("stage 1 (`top_q`)"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn fields_become_stages_in_the_documented_order() {
        let got = text(serde_json::json!({
            "min_p": 0.05, "top_p": 0.9, "top_k": 40, "temperature": 0.7,
            "frequency_penalty": 0.5, "logit_bias": {"13": -100, "7": 2.5},
            "typical_p": 0.95, "xtc_probability": 0.5,
        }))
        .unwrap();
        assert_eq!(
            got,
            canonical(
                "logit_bias({13: -100.0, 7: 2.5}) | \
                 penalty(repeat=1.0, frequency=0.5, presence=0.0, last_n=4294967295) | \
                 temp(0.7) | top_k(40) | typical(0.95, min_keep=1) | \
                 top_p(0.9, min_keep=1) | min_p(0.05, min_keep=1) | \
                 xtc(threshold=0.1, probability=0.5, min_keep=1) | dist"
            )
        );
        assert_eq!(
            text(serde_json::json!({"temperature": 0, "top_k": 5})).unwrap(),
            "greedy"
        );
        assert_eq!(
            text(serde_json::json!({"mirostat": 2, "top_k": 5, "temperature": 0.8})).unwrap(),
            canonical("temp(0.8) | mirostat_v2(tau=5.0, eta=0.1)")
        );
        assert_eq!(
            text(serde_json::json!({"repeat_penalty": 1.1, "repeat_last_n": 64})).unwrap(),
            "penalty(repeat=1.1, frequency=0.0, presence=0.0, last_n=64) | dist(seed=-1)"
        );
    }

    #[test]
    fn generation_config_fills_what_the_request_leaves_out() {
        let registry = sieve_samplers::builtin_registry();
        let mut d = defaults(&registry);
        d.generation.temperature = Some(0.6);
        d.generation.top_p = Some(0.9);
        let fields = JsonBody(serde_json::json!({"top_k": 10}))
            .sampling()
            .unwrap();
        assert_eq!(
            choose(&fields, &d, &registry).unwrap().spec().to_string(),
            canonical("temp(0.6) | top_k(10) | top_p(0.9, min_keep=1) | dist")
        );
        d.generation.do_sample = Some(false);
        assert_eq!(
            choose(&fields, &d, &registry).unwrap().spec().to_string(),
            "greedy"
        );
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
            (serde_json::json!({"dry_multiplier": 0.8}), "dry_multiplier"),
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
