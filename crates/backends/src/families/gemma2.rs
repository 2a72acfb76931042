//! Gemma 2 (`Gemma2ForCausalLM`, `model_type` `gemma2`): Llama's decoder with Gemma's norms,
//! GeGLU, scaled embeddings, softcapping and a sliding window on alternate layers.
//!
//! Differences from [`super::Llama`] (transformers' `Gemma2Config` and `modular_gemma2.py`):
//! - RMSNorm scales by `1 + w` (in `f32`), and each layer has four: `input_layernorm` and
//!   `post_attention_layernorm` around attention, `pre_feedforward_layernorm` and
//!   `post_feedforward_layernorm` around the MLP;
//! - the MLP is GeGLU with `hidden_activation` (`gelu_pytorch_tanh`);
//! - embeddings are multiplied by `√hidden_size`, rounded to the dtype the model computes in
//!   (`f32` here);
//! - attention scores are scaled by `query_pre_attn_scalar^-0.5` and softcapped
//!   (`attn_logit_softcapping`), the logits by `final_logit_softcapping` (`null` turns either
//!   off);
//! - `sliding_window` on the layers `layer_types` marks sliding (by default layers 0, 2, 4, …);
//! - `attention_bias` on q, k, v and o; tied embeddings by default; `head_dim` 256 by default.

use super::common::{sliding_layers, sliding_window, Biases, Defaults, LlamaLike};
use super::Family;
use crate::model::TransformerConfig;
use crate::Result;
use sieve_text::ConfigJson;

/// `Gemma2Config`'s defaults (Gemma 2 2B's sizes).
const DEFAULTS: Defaults = Defaults {
    vocab_size: 256000,
    hidden_size: 2304,
    intermediate_size: 9216,
    num_hidden_layers: 26,
    num_attention_heads: 8,
    num_key_value_heads: Some(4),
    max_position_embeddings: 8192,
    head_dim: Some(256),
    tie_word_embeddings: true,
    activation: ("hidden_activation", "gelu_pytorch_tanh"),
    ..super::llama::DEFAULTS
};

/// The Gemma 2 family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemma2;

impl Family for Gemma2 {
    fn architecture(&self) -> &'static str {
        "Gemma2ForCausalLM"
    }

    fn model_type(&self) -> &'static str {
        "gemma2"
    }

    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig> {
        let base = LlamaLike::read(config, &DEFAULTS)?;
        let sliding = sliding_layers(config, base.num_layers)?
            .unwrap_or_else(|| (0..base.num_layers).map(|i| i % 2 == 0).collect());
        let softcaps = Softcaps {
            attention: Some(50.0),
            final_logits: Some(30.0),
        };
        gemma_transformer(config, &base, &sliding, softcaps)
    }
}

/// The softcap defaults of a Gemma config class.
#[derive(Debug, Clone, Copy)]
pub(super) struct Softcaps {
    /// `attn_logit_softcapping`.
    pub attention: Option<f64>,
    /// `final_logit_softcapping`.
    pub final_logits: Option<f64>,
}

/// What Gemma 2 and Gemma 3 share on top of `base`: `sliding[i]` says whether layer `i` has
/// the window; the softcaps default to `softcaps`.
pub(super) fn gemma_transformer(
    config: &ConfigJson,
    base: &LlamaLike,
    sliding: &[bool],
    softcaps: Softcaps,
) -> Result<TransformerConfig> {
    let attention_bias = config.get("attention_bias")?.unwrap_or(false);
    let biases = Biases {
        qkv: attention_bias,
        o: attention_bias,
        mlp: false,
    };
    let window = sliding_window(config, Some(4096))?;
    let windows: Vec<_> = sliding
        .iter()
        .map(|&s| if s { window } else { None })
        .collect();
    let mut t = base.transformer(biases, &windows);
    let scalar = config.get::<f64>("query_pre_attn_scalar")?.unwrap_or(256.0);
    if !(scalar.is_finite() && scalar > 0.0) {
        return Err(config.invalid(format!(
            "`query_pre_attn_scalar` ({scalar}) must be positive"
        )));
    }
    let attention_cap = softcap(config, "attn_logit_softcapping", softcaps.attention)?;
    t.final_logit_softcap = softcap(config, "final_logit_softcapping", softcaps.final_logits)?;
    t.embedding.scale = Some((base.hidden_size as f64).sqrt() as f32);
    t.norm.unit_offset = true;
    for layer in &mut t.layers {
        layer.norm.unit_offset = true;
        layer.sandwich_norms = true;
        layer.attention.scale = scalar.powf(-0.5);
        layer.attention.logit_softcap = attention_cap;
    }
    Ok(t)
}

/// A softcap field: `default` when absent, `None` when `null`.
fn softcap(config: &ConfigJson, name: &str, default: Option<f64>) -> Result<Option<f64>> {
    let cap = config.get_nullable::<f64>(name)?.unwrap_or(default);
    if let Some(c) = cap {
        if !(c.is_finite() && c > 0.0) {
            return Err(config.invalid(format!("`{name}` ({c}) must be positive or null")));
        }
    }
    Ok(cap)
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;
    use crate::model::Activation;

    #[test]
    fn gemma_layers_and_alternate_windows() {
        let c = parse(
            r#"{"architectures":["Gemma2ForCausalLM"],"num_hidden_layers":3,"hidden_size":64,
                "query_pre_attn_scalar":16,"sliding_window":8}"#,
        )
        .unwrap();
        let w: Vec<_> = c
            .layers
            .iter()
            .map(|l| l.attention.sliding_window)
            .collect();
        assert_eq!(w, vec![Some(8), None, Some(8)]);
        let l = c.layers[0];
        assert!(l.sandwich_norms && l.norm.unit_offset && c.norm.unit_offset);
        assert_eq!(l.mlp.activation, Activation::GeluTanh);
        assert_eq!(l.attention.scale, 0.25);
        assert_eq!(l.attention.logit_softcap, Some(50.0));
        assert_eq!(c.final_logit_softcap, Some(30.0));
        assert_eq!(c.embedding.scale, Some(8.0));
        assert!(c.embedding.tied && l.attention.qk_norm.is_none());
        assert_eq!(l.attention.head_dim, 256);
    }

    #[test]
    fn null_softcaps_turn_them_off_and_bad_ones_are_named() {
        let c = parse(
            r#"{"model_type":"gemma2","attn_logit_softcapping":null,"final_logit_softcapping":null}"#,
        )
        .unwrap();
        assert!(c.final_logit_softcap.is_none() && c.layers[0].attention.logit_softcap.is_none());
        let e = parse(r#"{"model_type":"gemma2","final_logit_softcapping":0}"#).unwrap_err();
        assert!(e.to_string().contains("final_logit_softcapping"), "{e}");
        let e = parse(r#"{"model_type":"gemma2","hidden_activation":"relu"}"#).unwrap_err();
        assert!(e.to_string().contains("hidden_activation"), "{e}");
    }
}
