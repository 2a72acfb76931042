//! Qwen3 (`Qwen3ForCausalLM`, `model_type` `qwen3`): Llama with an RMSNorm over each query and
//! key head before RoPE.
//!
//! Differences from [`super::Llama`] (transformers' `Qwen3Config` and `modular_qwen3.py`):
//! `q_norm`/`k_norm` (an `RMSNorm(head_dim)` per head, weights shared across heads); `head_dim`
//! defaults to 128 whatever `hidden_size / num_attention_heads` is; `attention_bias` on q, k,
//! v and o (default off), no MLP bias; other size defaults; the sliding window of Qwen2
//! (`use_sliding_window`, `sliding_window`, `layer_types` or `max_window_layers`).

use super::common::{Biases, Defaults, LlamaLike};
use super::Family;
use crate::model::{NormConfig, TransformerConfig};
use crate::Result;
use sieve_text::ConfigJson;

/// `Qwen3Config`'s defaults.
const DEFAULTS: Defaults = Defaults {
    vocab_size: 151936,
    intermediate_size: 22016,
    num_key_value_heads: Some(32),
    max_position_embeddings: 32768,
    head_dim: Some(128),
    ..super::llama::DEFAULTS
};

/// The Qwen3 family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qwen3;

impl Family for Qwen3 {
    fn architecture(&self) -> &'static str {
        "Qwen3ForCausalLM"
    }

    fn model_type(&self) -> &'static str {
        "qwen3"
    }

    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig> {
        let base = LlamaLike::read(config, &DEFAULTS)?;
        let attention_bias = config.get("attention_bias")?.unwrap_or(false);
        let biases = Biases {
            qkv: attention_bias,
            o: attention_bias,
            mlp: false,
        };
        let windows = super::qwen2::windows(config, base.num_layers)?;
        let mut t = base.transformer(biases, &windows);
        let head_norm = NormConfig::new(base.head_dim, base.rms_norm_eps);
        for layer in &mut t.layers {
            layer.attention.qk_norm = Some(head_norm);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;

    #[test]
    fn head_norms_and_a_head_dim_of_its_own() {
        let c = parse(
            r#"{"architectures":["Qwen3ForCausalLM"],"hidden_size":64,"num_attention_heads":4,
                "num_key_value_heads":2,"num_hidden_layers":2}"#,
        )
        .unwrap();
        let a = c.layers[0].attention;
        assert_eq!(a.head_dim, 128);
        assert_eq!(a.qk_norm.map(|n| n.dim), Some(128));
        assert!(!a.qkv_bias && !a.o_bias && !c.embedding.tied);
        assert_eq!(a.scale, 128f64.powf(-0.5));
        let c = parse(r#"{"model_type":"qwen3","head_dim":16,"attention_bias":true}"#).unwrap();
        let a = c.layers[0].attention;
        assert_eq!(a.head_dim, 16);
        assert!(a.qkv_bias && a.o_bias);
    }

    #[test]
    fn sliding_layers_follow_layer_types() {
        let c = parse(
            r#"{"model_type":"qwen3","num_hidden_layers":2,"sliding_window":8,
                "use_sliding_window":true,"layer_types":["full_attention","sliding_attention"]}"#,
        )
        .unwrap();
        let w: Vec<_> = c
            .layers
            .iter()
            .map(|l| l.attention.sliding_window)
            .collect();
        assert_eq!(w, vec![None, Some(8)]);
    }
}
