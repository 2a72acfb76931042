//! Llama (`LlamaForCausalLM`, `model_type` `llama`): Llama 1/2/3, SmolLM, TinyLlama. The base
//! the other families differ from.
//!
//! Defaults are transformers 4.57's `LlamaConfig`; what Llama adds to the shared fields:
//! `attention_bias` (q, k, v and o projections) and `mlp_bias`; no sliding window.

use super::common::{Biases, Defaults, LlamaLike};
use super::Family;
use crate::model::TransformerConfig;
use crate::Result;
use sieve_text::ConfigJson;

/// `LlamaConfig`'s defaults (Llama 2 7B's sizes).
pub(crate) const DEFAULTS: Defaults = Defaults {
    vocab_size: 32000,
    hidden_size: 4096,
    intermediate_size: 11008,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    num_key_value_heads: None,
    max_position_embeddings: 2048,
    rms_norm_eps: 1e-6,
    rope_theta: 10000.0,
    head_dim: None,
    tie_word_embeddings: false,
    activation: ("hidden_act", "silu"),
    local_rope: false,
};

/// The Llama family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Llama;

impl Family for Llama {
    fn architecture(&self) -> &'static str {
        "LlamaForCausalLM"
    }

    fn model_type(&self) -> &'static str {
        "llama"
    }

    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig> {
        let base = LlamaLike::read(config, &DEFAULTS)?;
        let attention_bias = config.get("attention_bias")?.unwrap_or(false);
        let biases = Biases {
            qkv: attention_bias,
            o: attention_bias,
            mlp: config.get("mlp_bias")?.unwrap_or(false),
        };
        Ok(base.transformer(biases, &vec![None; base.num_layers]))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;
    use crate::model::RopeScaling;

    #[test]
    fn defaults_fill_absent_fields() {
        let c = parse(
            r#"{"architectures":["LlamaForCausalLM"],"hidden_size":64,"num_attention_heads":4}"#,
        )
        .unwrap();
        let a = c.layers[0].attention;
        assert_eq!((a.num_kv_heads, a.head_dim, c.vocab_size()), (4, 16, 32000));
        assert_eq!(c.layers.len(), 32);
        assert_eq!((c.norm.eps, c.context_len), (1e-6, 2048));
        assert_eq!((c.rope.theta, c.rope.scaling), (10000.0, RopeScaling::None));
        assert!(!c.embedding.tied && !a.qkv_bias && !a.o_bias && !c.layers[0].mlp.bias);
        assert!(c
            .layers
            .iter()
            .all(|l| l.attention.sliding_window.is_none()));
    }

    #[test]
    fn attention_bias_covers_qkv_and_o_and_mlp_bias_the_mlp() {
        let c = parse(r#"{"model_type":"llama","attention_bias":true,"mlp_bias":true}"#).unwrap();
        let l = c.layers[0];
        assert!(l.attention.qkv_bias && l.attention.o_bias && l.mlp.bias);
    }

    #[test]
    fn llama3_rope_scaling_is_read() {
        let c = parse(
            r#"{"model_type":"llama","rope_theta":500000.0,"rope_scaling":{"rope_type":"llama3",
                "factor":32.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
                "original_max_position_embeddings":8192}}"#,
        )
        .unwrap();
        assert_eq!(c.rope.theta, 5e5);
        assert!(matches!(c.rope.scaling, RopeScaling::Llama3 { factor, .. } if factor == 32.0));
    }
}
