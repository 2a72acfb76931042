//! Model families, one file each: a family reads its fields of `config.json` (transformers
//! 4.x and 5.x spellings, its config class's defaults) and maps them onto the modules' own
//! configs, a [`TransformerConfig`]. No module reads `config.json`.
//!
//! - `common` (crate-private) and `rope_scaling`: what every Llama-like family reads the same way, and
//!   the RoPE fields; a family file states only its defaults and what differs from Llama, as
//!   transformers' `modular_*.py` files do;
//! - [`Llama`], [`Mistral`], [`Qwen2`], [`Qwen3`], [`Gemma2`], [`Gemma3`]: the families;
//! - [`FAMILIES`]: the registry; [`family_of`] picks a family by `architectures[0]` (else
//!   `model_type`), and its "unknown architecture" error lists the registry.
//!
//! Adding a family: its file, one `mod` line and one [`FAMILIES`] entry.

mod common;
mod gemma2;
mod gemma3;
mod llama;
mod mistral;
mod qwen2;
mod qwen3;
mod rope_scaling;

use std::fmt;

pub use gemma2::Gemma2;
pub use gemma3::Gemma3;
pub use llama::Llama;
pub use mistral::Mistral;
pub use qwen2::Qwen2;
pub use qwen3::Qwen3;

use crate::model::TransformerConfig;
use crate::{Error, Result};
use sieve_text::ConfigJson;

/// A model family: how its `config.json` becomes a [`TransformerConfig`].
pub trait Family: fmt::Debug + Sync {
    /// The `architectures` entry transformers writes for this family (`LlamaForCausalLM`).
    fn architecture(&self) -> &'static str;

    /// The `model_type` of this family (`llama`), used when `architectures` is absent.
    fn model_type(&self) -> &'static str;

    /// Reads the family's fields of `config` (with the family's defaults for absent ones)
    /// into the transformer's configuration.
    ///
    /// # Errors
    /// [`sieve_text::Error::Json`] naming a field of the wrong type,
    /// [`sieve_text::Error::InvalidConfig`] naming a field whose value no model can have or
    /// that asks for something not implemented (both inside [`Error::Text`]).
    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig>;
}

/// Every family this crate implements, in the order "supported: …" lists them.
pub static FAMILIES: &[&dyn Family] = &[&Llama, &Mistral, &Qwen2, &Qwen3, &Gemma2, &Gemma3];

/// The family `config` names: its `architectures[0]` (what transformers instantiates), else
/// its `model_type`.
///
/// # Errors
/// [`sieve_text::Error::Json`] when `architectures` or `model_type` has the wrong type,
/// [`Error::UnknownArchitecture`] (listing [`FAMILIES`]) when no family matches.
pub fn family_of(config: &ConfigJson) -> Result<&'static dyn Family> {
    let unknown = |found: String| Error::UnknownArchitecture {
        path: config.path().to_path_buf(),
        found,
        supported: FAMILIES.iter().map(|f| f.architecture()).collect(),
    };
    let architectures = config.get::<Vec<String>>("architectures")?;
    match (
        architectures.as_deref(),
        config.get::<String>("model_type")?,
    ) {
        (Some([first, ..]), _) => FAMILIES
            .iter()
            .find(|f| f.architecture() == first)
            .copied()
            .ok_or_else(|| unknown(format!("`{first}`"))),
        (_, Some(model_type)) => FAMILIES
            .iter()
            .find(|f| f.model_type() == model_type)
            .copied()
            .ok_or_else(|| unknown(format!("model_type `{model_type}`"))),
        _ => Err(unknown(
            "nothing (no `architectures` nor `model_type`)".to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The transformer `text` describes, through the registry.
    pub(super) fn parse(text: &str) -> Result<TransformerConfig> {
        let config = ConfigJson::from_json(Path::new("config.json"), text)?;
        family_of(&config)?.transformer_config(&config)
    }

    #[test]
    fn architectures_win_over_model_type() {
        let c = ConfigJson::from_json(
            Path::new("config.json"),
            r#"{"architectures":["Qwen2ForCausalLM"],"model_type":"llama"}"#,
        )
        .unwrap();
        assert_eq!(family_of(&c).unwrap().architecture(), "Qwen2ForCausalLM");
    }

    #[test]
    fn unknown_architecture_lists_the_supported_ones() {
        let e = parse(r#"{"architectures":["GPT2LMHeadModel"]}"#).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("GPT2LMHeadModel"), "{text}");
        assert!(
            text.contains("LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"),
            "{text}"
        );
        let e = parse(r#"{"model_type":"gpt2"}"#).unwrap_err();
        assert!(e.to_string().contains("model_type `gpt2`"), "{e}");
        assert!(matches!(
            parse("{}").unwrap_err(),
            Error::UnknownArchitecture { .. }
        ));
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let e = parse(r#"{"model_type":"llama","num_hidden_layers":"two"}"#).unwrap_err();
        match e {
            Error::Text(sieve_text::Error::Json { field, .. }) => {
                assert_eq!(field.as_deref(), Some("num_hidden_layers"))
            }
            other => panic!("unexpected {other:?}"),
        }
        let e = parse(r#"{"model_type":"llama","rms_norm_eps":[1]}"#).unwrap_err();
        assert!(e.to_string().contains("field `rms_norm_eps`"), "{e}");
        let e = parse(r#"{"architectures":"LlamaForCausalLM"}"#).unwrap_err();
        assert!(e.to_string().contains("field `architectures`"), "{e}");
    }

    #[test]
    fn impossible_shapes_and_unimplemented_options_are_rejected() {
        for (text, needle) in [
            (
                r#"{"model_type":"llama","num_attention_heads":6,"num_key_value_heads":4}"#,
                "multiple",
            ),
            (r#"{"model_type":"llama","hidden_size":0}"#, "hidden_size"),
            (
                r#"{"model_type":"llama","hidden_size":30,"num_attention_heads":4}"#,
                "head_dim",
            ),
            (r#"{"model_type":"llama","head_dim":0}"#, "head_dim"),
            (
                r#"{"model_type":"llama","hidden_act":"gelu"}"#,
                "hidden_act",
            ),
            (r#"{"model_type":"llama","head_dim":7}"#, "even"),
            (
                r#"{"model_type":"llama","rms_norm_eps":-1}"#,
                "rms_norm_eps",
            ),
            (
                r#"{"model_type":"mistral","partial_rotary_factor":0.5}"#,
                "partial_rotary_factor",
            ),
            (
                r#"{"model_type":"qwen2","rope_scaling":{"rope_type":"yarn","factor":4}}"#,
                "yarn",
            ),
            (
                r#"{"model_type":"mistral","sliding_window":0}"#,
                "sliding_window",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(
                matches!(e, Error::Text(sieve_text::Error::InvalidConfig { .. })),
                "{text}: {e:?}"
            );
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn transformers_5_rope_parameters_are_read_by_every_family() {
        for family in FAMILIES {
            let text = format!(
                r#"{{"model_type":"{}","rope_parameters":{{"rope_type":"default","rope_theta":5e5}}}}"#,
                family.model_type()
            );
            assert_eq!(parse(&text).unwrap().rope.theta, 5e5, "{family:?}");
        }
    }
}
