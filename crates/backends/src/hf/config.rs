//! `config.json` of a Hugging Face model directory: the raw fields as transformers writes them,
//! the defaults transformers applies per family, and the validated [`ModelConfig`] the model is
//! built from.
//!
//! Families: `LlamaForCausalLM` (Llama 1/2/3, SmolLM, TinyLlama), `MistralForCausalLM`,
//! `Qwen2ForCausalLM`. Defaults follow transformers 4.57 (`LlamaConfig`, `MistralConfig`,
//! `Qwen2Config`); the transformers 5 `rope_parameters` field is read as well.

use std::path::Path;

use serde::Deserialize;

use super::json::{parse_json, OneOrMany};
use super::rope_scaling::{parse_rope, RopeScaling};
use crate::{Error, Result};

/// The model families this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// `LlamaForCausalLM` (also SmolLM, TinyLlama).
    Llama,
    /// `MistralForCausalLM`.
    Mistral,
    /// `Qwen2ForCausalLM` (q/k/v projections with bias).
    Qwen2,
}

impl Architecture {
    /// Every supported `architectures` entry, as written in `config.json`.
    pub const SUPPORTED: [&'static str; 3] =
        ["LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"];

    /// The family of an `architectures` entry or a `model_type`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "LlamaForCausalLM" | "llama" => Some(Architecture::Llama),
            "MistralForCausalLM" | "mistral" => Some(Architecture::Mistral),
            "Qwen2ForCausalLM" | "qwen2" => Some(Architecture::Qwen2),
            _ => None,
        }
    }

    /// The `architectures` entry of this family.
    pub fn hf_name(self) -> &'static str {
        match self {
            Architecture::Llama => "LlamaForCausalLM",
            Architecture::Mistral => "MistralForCausalLM",
            Architecture::Qwen2 => "Qwen2ForCausalLM",
        }
    }
}

/// Deserializes a present field (even `null`) as `Some(value)`, so that an absent field
/// (`None`) can be told from an explicit `null` (`Some(None)`).
fn present<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `config.json` as written, every field optional (defaults depend on the family).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawConfig {
    architectures: Option<Vec<String>>,
    model_type: Option<String>,
    vocab_size: Option<usize>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    hidden_act: Option<String>,
    max_position_embeddings: Option<usize>,
    rms_norm_eps: Option<f64>,
    rope_theta: Option<f64>,
    rope_scaling: Option<serde_json::Value>,
    rope_parameters: Option<serde_json::Value>,
    partial_rotary_factor: Option<f64>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    mlp_bias: Option<bool>,
    #[serde(deserialize_with = "present")]
    sliding_window: Option<Option<usize>>,
    use_sliding_window: Option<bool>,
    max_window_layers: Option<usize>,
    layer_types: Option<Vec<String>>,
    bos_token_id: Option<u32>,
    eos_token_id: Option<OneOrMany>,
}

/// A validated model description: everything the transformer needs, with the family's
/// defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The family.
    pub architecture: Architecture,
    /// Rows of the embedding and of the output projection (the logits length).
    pub vocab_size: usize,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the SwiGLU MLP.
    pub intermediate_size: usize,
    /// Number of decoder layers.
    pub num_layers: usize,
    /// Number of query heads.
    pub num_heads: usize,
    /// Number of key/value heads (grouped-query attention when below `num_heads`).
    pub num_kv_heads: usize,
    /// Width of one head (`head_dim`, else `hidden_size / num_heads`).
    pub head_dim: usize,
    /// The context length (`max_position_embeddings`).
    pub max_position_embeddings: usize,
    /// RMSNorm epsilon (`rms_norm_eps`).
    pub rms_norm_eps: f64,
    /// RoPE base (`rope_theta`).
    pub rope_theta: f64,
    /// RoPE frequency scaling (`rope_scaling`).
    pub rope_scaling: RopeScaling,
    /// Whether the output projection is the embedding matrix (`tie_word_embeddings`).
    pub tie_word_embeddings: bool,
    /// Whether q, k and v projections have a bias (Qwen2; Llama's `attention_bias`).
    pub qkv_bias: bool,
    /// Whether the output projection of attention has a bias (Llama's `attention_bias`).
    pub o_bias: bool,
    /// Whether the MLP projections have a bias (Llama's `mlp_bias`).
    pub mlp_bias: bool,
    /// Per layer, the sliding attention window (a query sees the last `w` positions, itself
    /// included), or `None` for full causal attention.
    pub sliding_windows: Vec<Option<usize>>,
    /// `bos_token_id`, when given.
    pub bos_token_id: Option<u32>,
    /// `eos_token_id` as a list (empty when not given).
    pub eos_token_ids: Vec<u32>,
}

/// Family defaults (transformers 4.57), for fields absent from the file.
struct Defaults {
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    max_position_embeddings: usize,
    sliding_window: Option<usize>,
}

fn defaults(arch: Architecture) -> Defaults {
    match arch {
        Architecture::Llama => Defaults {
            vocab_size: 32000,
            hidden_size: 4096,
            intermediate_size: 11008,
            num_hidden_layers: 32,
            num_attention_heads: 32,
            num_key_value_heads: None,
            max_position_embeddings: 2048,
            sliding_window: None,
        },
        Architecture::Mistral => Defaults {
            vocab_size: 32000,
            hidden_size: 4096,
            intermediate_size: 14336,
            num_hidden_layers: 32,
            num_attention_heads: 32,
            num_key_value_heads: Some(8),
            max_position_embeddings: 4096 * 32,
            sliding_window: Some(4096),
        },
        Architecture::Qwen2 => Defaults {
            vocab_size: 151936,
            hidden_size: 4096,
            intermediate_size: 22016,
            num_hidden_layers: 32,
            num_attention_heads: 32,
            num_key_value_heads: Some(32),
            max_position_embeddings: 32768,
            sliding_window: Some(4096),
        },
    }
}

impl ModelConfig {
    /// Reads and validates `config.json` at `path`.
    ///
    /// # Errors
    /// [`Error::MissingFile`], [`Error::Json`] (naming a field of the wrong type),
    /// [`Error::UnknownArchitecture`], or [`Error::InvalidConfig`] for values no model can
    /// have (zero sizes, heads that do not divide, an unsupported activation or RoPE type).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = super::json::read_text(path)?;
        Self::from_json(path, &text)
    }

    /// Parses and validates the text of a `config.json`; `path` only names it in errors.
    ///
    /// # Errors
    /// As [`ModelConfig::from_file`].
    pub fn from_json(path: &Path, text: &str) -> Result<Self> {
        let raw: RawConfig = parse_json(path, text)?;
        build(path, raw)
    }

    /// Number of query heads sharing one key/value head.
    pub fn group_size(&self) -> usize {
        self.num_heads / self.num_kv_heads
    }
}

fn invalid(path: &Path, message: impl Into<String>) -> Error {
    Error::InvalidConfig {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn architecture(path: &Path, raw: &RawConfig) -> Result<Architecture> {
    let unknown = |found: String| Error::UnknownArchitecture {
        path: path.to_path_buf(),
        found,
        supported: Architecture::SUPPORTED.to_vec(),
    };
    match (&raw.architectures, &raw.model_type) {
        (Some(list), _) if !list.is_empty() => {
            // transformers instantiates `architectures[0]`.
            Architecture::from_name(&list[0]).ok_or_else(|| unknown(format!("`{}`", list[0])))
        }
        (_, Some(model_type)) => Architecture::from_name(model_type)
            .ok_or_else(|| unknown(format!("model_type `{model_type}`"))),
        _ => Err(unknown(
            "nothing (no `architectures` nor `model_type`)".to_string(),
        )),
    }
}

fn positive(path: &Path, name: &str, value: usize) -> Result<usize> {
    if value == 0 {
        return Err(invalid(path, format!("`{name}` must be positive")));
    }
    Ok(value)
}

fn build(path: &Path, raw: RawConfig) -> Result<ModelConfig> {
    let architecture = architecture(path, &raw)?;
    let d = defaults(architecture);
    let vocab_size = positive(path, "vocab_size", raw.vocab_size.unwrap_or(d.vocab_size))?;
    let hidden_size = positive(
        path,
        "hidden_size",
        raw.hidden_size.unwrap_or(d.hidden_size),
    )?;
    let intermediate_size = positive(
        path,
        "intermediate_size",
        raw.intermediate_size.unwrap_or(d.intermediate_size),
    )?;
    let num_layers = positive(
        path,
        "num_hidden_layers",
        raw.num_hidden_layers.unwrap_or(d.num_hidden_layers),
    )?;
    let num_heads = positive(
        path,
        "num_attention_heads",
        raw.num_attention_heads.unwrap_or(d.num_attention_heads),
    )?;
    let num_kv_heads = positive(
        path,
        "num_key_value_heads",
        raw.num_key_value_heads
            .or(d.num_key_value_heads)
            .unwrap_or(num_heads),
    )?;
    if num_heads % num_kv_heads != 0 {
        return Err(invalid(
            path,
            format!(
                "`num_attention_heads` ({num_heads}) must be a multiple of `num_key_value_heads` ({num_kv_heads})"
            ),
        ));
    }
    let head_dim = match raw.head_dim {
        Some(h) => positive(path, "head_dim", h)?,
        None if hidden_size % num_heads == 0 => hidden_size / num_heads,
        None => {
            return Err(invalid(
                path,
                format!(
                    "`hidden_size` ({hidden_size}) is not a multiple of `num_attention_heads` ({num_heads}) and no `head_dim` is given"
                ),
            ))
        }
    };
    if head_dim % 2 != 0 {
        return Err(invalid(
            path,
            format!("`head_dim` ({head_dim}) must be even for RoPE"),
        ));
    }
    let act = raw.hidden_act.as_deref().unwrap_or("silu");
    if act != "silu" {
        return Err(invalid(
            path,
            format!("`hidden_act` `{act}` is not supported (only `silu`)"),
        ));
    }
    if let Some(f) = raw.partial_rotary_factor {
        if f != 1.0 {
            return Err(invalid(
                path,
                "`partial_rotary_factor` other than 1 is not supported",
            ));
        }
    }
    let max_position_embeddings = positive(
        path,
        "max_position_embeddings",
        raw.max_position_embeddings
            .unwrap_or(d.max_position_embeddings),
    )?;
    let rms_norm_eps = raw.rms_norm_eps.unwrap_or(1e-6);
    if !(rms_norm_eps.is_finite() && rms_norm_eps > 0.0) {
        return Err(invalid(
            path,
            format!("`rms_norm_eps` ({rms_norm_eps}) must be positive"),
        ));
    }
    let (rope_theta, rope_scaling) = parse_rope(
        path,
        raw.rope_theta,
        raw.rope_scaling.as_ref(),
        raw.rope_parameters.as_ref(),
    )?;
    let (qkv_bias, o_bias) = match architecture {
        Architecture::Qwen2 => (true, false),
        Architecture::Mistral => (false, false),
        Architecture::Llama => {
            let b = raw.attention_bias.unwrap_or(false);
            (b, b)
        }
    };
    let mlp_bias = architecture == Architecture::Llama && raw.mlp_bias.unwrap_or(false);
    let sliding_windows = sliding_windows(path, architecture, &raw, &d, num_layers)?;
    Ok(ModelConfig {
        architecture,
        vocab_size,
        hidden_size,
        intermediate_size,
        num_layers,
        num_heads,
        num_kv_heads,
        head_dim,
        max_position_embeddings,
        rms_norm_eps,
        rope_theta,
        rope_scaling,
        tie_word_embeddings: raw.tie_word_embeddings.unwrap_or(false),
        qkv_bias,
        o_bias,
        mlp_bias,
        sliding_windows,
        bos_token_id: raw.bos_token_id,
        eos_token_ids: raw
            .eos_token_id
            .map(OneOrMany::into_vec)
            .unwrap_or_default(),
    })
}

/// The attention window of each layer, as transformers decides it:
/// - Llama: none;
/// - Mistral: `sliding_window` (default 4096; `null` turns it off) on every layer;
/// - Qwen2: only when `use_sliding_window`, on the layers `layer_types` marks
///   `sliding_attention` (by default those at index `max_window_layers` and above).
fn sliding_windows(
    path: &Path,
    arch: Architecture,
    raw: &RawConfig,
    d: &Defaults,
    num_layers: usize,
) -> Result<Vec<Option<usize>>> {
    let window = raw.sliding_window.unwrap_or(d.sliding_window);
    if window == Some(0) {
        return Err(invalid(path, "`sliding_window` must be positive or null"));
    }
    match arch {
        Architecture::Llama => Ok(vec![None; num_layers]),
        Architecture::Mistral => Ok(vec![window; num_layers]),
        Architecture::Qwen2 => {
            let window = if raw.use_sliding_window.unwrap_or(false) {
                window
            } else {
                None
            };
            match &raw.layer_types {
                Some(types) => {
                    if types.len() != num_layers {
                        return Err(invalid(
                            path,
                            format!(
                                "`layer_types` has {} entries for {num_layers} layers",
                                types.len()
                            ),
                        ));
                    }
                    types
                        .iter()
                        .map(|t| match t.as_str() {
                            "sliding_attention" => Ok(window),
                            "full_attention" => Ok(None),
                            other => Err(invalid(
                                path,
                                format!("`layer_types` entry `{other}` is not supported"),
                            )),
                        })
                        .collect()
                }
                None => {
                    let first = raw.max_window_layers.unwrap_or(28);
                    Ok((0..num_layers)
                        .map(|i| if i >= first { window } else { None })
                        .collect())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ModelConfig> {
        ModelConfig::from_json(Path::new("config.json"), text)
    }

    #[test]
    fn llama_defaults_fill_absent_fields() {
        let c = parse(
            r#"{"architectures":["LlamaForCausalLM"],"hidden_size":64,"num_attention_heads":4}"#,
        )
        .unwrap();
        assert_eq!(c.architecture, Architecture::Llama);
        assert_eq!((c.num_kv_heads, c.head_dim, c.vocab_size), (4, 16, 32000));
        assert_eq!(c.rms_norm_eps, 1e-6);
        assert_eq!(c.rope_theta, 10000.0);
        assert!(!c.tie_word_embeddings && !c.qkv_bias);
        assert_eq!(c.sliding_windows, vec![None; 32]);
    }

    #[test]
    fn mistral_window_defaults_to_4096_and_null_turns_it_off() {
        let c = parse(r#"{"model_type":"mistral","num_hidden_layers":2}"#).unwrap();
        assert_eq!(c.sliding_windows, vec![Some(4096); 2]);
        assert_eq!(c.num_kv_heads, 8);
        let c = parse(r#"{"model_type":"mistral","num_hidden_layers":2,"sliding_window":null}"#)
            .unwrap();
        assert_eq!(c.sliding_windows, vec![None; 2]);
    }

    #[test]
    fn qwen2_has_qkv_bias_and_windows_only_when_enabled() {
        let c = parse(
            r#"{"architectures":["Qwen2ForCausalLM"],"num_hidden_layers":3,"sliding_window":8}"#,
        )
        .unwrap();
        assert!(c.qkv_bias && !c.o_bias);
        assert_eq!(c.sliding_windows, vec![None; 3]);
        let c = parse(
            r#"{"architectures":["Qwen2ForCausalLM"],"num_hidden_layers":3,"sliding_window":8,
                "use_sliding_window":true,"max_window_layers":1}"#,
        )
        .unwrap();
        assert_eq!(c.sliding_windows, vec![None, Some(8), Some(8)]);
    }

    #[test]
    fn eos_may_be_one_id_or_a_list() {
        let c = parse(r#"{"model_type":"llama","eos_token_id":2}"#).unwrap();
        assert_eq!(c.eos_token_ids, vec![2]);
        let c = parse(r#"{"model_type":"llama","eos_token_id":[5,7]}"#).unwrap();
        assert_eq!(c.eos_token_ids, vec![5, 7]);
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
        assert!(matches!(
            parse("{}").unwrap_err(),
            Error::UnknownArchitecture { .. }
        ));
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let e = parse(r#"{"model_type":"llama","num_hidden_layers":"two"}"#).unwrap_err();
        match e {
            Error::Json { field, .. } => assert_eq!(field.as_deref(), Some("num_hidden_layers")),
            other => panic!("unexpected {other:?}"),
        }
        let e = parse(r#"{"model_type":"llama","rms_norm_eps":[1]}"#).unwrap_err();
        assert!(e.to_string().contains("field `rms_norm_eps`"), "{e}");
    }

    #[test]
    fn impossible_shapes_are_rejected() {
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
            (
                r#"{"model_type":"llama","hidden_act":"gelu"}"#,
                "hidden_act",
            ),
            (r#"{"model_type":"llama","head_dim":7}"#, "even"),
            (
                r#"{"model_type":"llama","rms_norm_eps":-1}"#,
                "rms_norm_eps",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, Error::InvalidConfig { .. }), "{text}: {e:?}");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn invalid_json_is_an_error_not_a_panic() {
        assert!(matches!(
            parse("{\"model_type\": ").unwrap_err(),
            Error::Json { .. }
        ));
        // serde reads a struct from an empty array too; it then names no architecture.
        assert!(matches!(
            parse("[]").unwrap_err(),
            Error::UnknownArchitecture { .. }
        ));
        assert!(matches!(parse("3").unwrap_err(), Error::Json { .. }));
        assert!(matches!(
            parse("{} trailing").unwrap_err(),
            Error::Json { .. }
        ));
    }
}
