//! Gemma 3 text (`Gemma3ForCausalLM`, `model_type` `gemma3_text`): Gemma 2's layer with q/k
//! norms, five sliding layers to one global, and a RoPE base of its own for sliding layers.
//!
//! Differences from [`super::Gemma2`] (transformers' `Gemma3TextConfig` and
//! `modular_gemma3.py`):
//! - `q_norm`/`k_norm`: a Gemma RMSNorm (`1 + w`) over each query and key head before RoPE;
//! - `layer_types`, else `sliding_window_pattern` (default 6: layers 5, 11, … are global);
//! - sliding layers rotate with `rope_local_base_freq` (default 10000) and no scaling, global
//!   layers with `rope_theta` (default 10⁶) and `rope_scaling`; transformers 5 writes both in
//!   `rope_parameters` per layer type;
//! - softcaps off by default; other size defaults;
//! - `use_bidirectional_attention` (EmbeddingGemma) is not implemented and is an error.

use super::common::{sliding_layers, Defaults, LlamaLike};
use super::gemma2::{gemma_transformer, Softcaps};
use super::rope_scaling::read_local_rope;
use super::Family;
use crate::model::{NormConfig, RopeConfig, RopeScaling, TransformerConfig};
use crate::Result;
use sieve_text::ConfigJson;

/// `Gemma3TextConfig`'s defaults (Gemma 3 4B's text sizes).
const DEFAULTS: Defaults = Defaults {
    vocab_size: 262208,
    hidden_size: 2304,
    intermediate_size: 9216,
    num_hidden_layers: 26,
    num_attention_heads: 8,
    num_key_value_heads: Some(4),
    max_position_embeddings: 131072,
    rope_theta: 1_000_000.0,
    head_dim: Some(256),
    tie_word_embeddings: true,
    activation: ("hidden_activation", "gelu_pytorch_tanh"),
    local_rope: true,
    ..super::llama::DEFAULTS
};

/// `rope_local_base_freq`'s default.
const LOCAL_BASE: f64 = 10000.0;

/// `sliding_window_pattern`'s default.
const PATTERN: usize = 6;

/// The Gemma 3 text family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gemma3;

impl Family for Gemma3 {
    fn architecture(&self) -> &'static str {
        "Gemma3ForCausalLM"
    }

    fn model_type(&self) -> &'static str {
        "gemma3_text"
    }

    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig> {
        if config.get("use_bidirectional_attention")?.unwrap_or(false) {
            return Err(config.invalid("`use_bidirectional_attention` is not supported"));
        }
        let base = LlamaLike::read(config, &DEFAULTS)?;
        let sliding = match sliding_layers(config, base.num_layers)? {
            Some(s) => s,
            None => {
                let pattern = config
                    .get::<usize>("sliding_window_pattern")?
                    .unwrap_or(PATTERN);
                if pattern == 0 {
                    return Err(config.invalid("`sliding_window_pattern` must be positive"));
                }
                (0..base.num_layers)
                    .map(|i| (i + 1) % pattern != 0)
                    .collect()
            }
        };
        let softcaps = Softcaps {
            attention: None,
            final_logits: None,
        };
        let mut t = gemma_transformer(config, &base, &sliding, softcaps)?;
        let (theta, scaling) = match read_local_rope(config, LOCAL_BASE)? {
            Some(local) => local,
            None => {
                let theta = config
                    .get::<f64>("rope_local_base_freq")?
                    .unwrap_or(LOCAL_BASE);
                if !(theta.is_finite() && theta > 0.0) {
                    return Err(config
                        .invalid(format!("`rope_local_base_freq` ({theta}) must be positive")));
                }
                (theta, RopeScaling::None)
            }
        };
        t.local_rope = Some(RopeConfig {
            head_dim: base.head_dim,
            theta,
            scaling,
        });
        let head_norm = NormConfig {
            unit_offset: true,
            ..NormConfig::new(base.head_dim, base.rms_norm_eps)
        };
        for (layer, &s) in t.layers.iter_mut().zip(&sliding) {
            layer.local_rope = s;
            layer.attention.qk_norm = Some(head_norm);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;
    use crate::model::RopeScaling;

    #[test]
    fn five_local_layers_to_one_global_with_their_own_rope() {
        let c = parse(
            r#"{"architectures":["Gemma3ForCausalLM"],"num_hidden_layers":7,"sliding_window":8,
                "rope_scaling":{"rope_type":"linear","factor":8.0}}"#,
        )
        .unwrap();
        let local: Vec<_> = c.layers.iter().map(|l| l.local_rope).collect();
        assert_eq!(local, [true, true, true, true, true, false, true]);
        assert_eq!(c.layers[5].attention.sliding_window, None);
        assert_eq!(c.layers[0].attention.sliding_window, Some(8));
        assert_eq!(
            (c.rope.theta, c.rope.scaling),
            (1e6, RopeScaling::Linear { factor: 8.0 })
        );
        let l = c.local_rope.unwrap();
        assert_eq!((l.theta, l.scaling), (1e4, RopeScaling::None));
        let n = c.layers[0].attention.qk_norm.unwrap();
        assert!(n.unit_offset && n.dim == 256);
        assert!(c.final_logit_softcap.is_none() && c.layers[0].attention.logit_softcap.is_none());
    }

    #[test]
    fn transformers_5_rope_parameters_per_layer_type() {
        let c = parse(
            r#"{"model_type":"gemma3_text","num_hidden_layers":2,"sliding_window_pattern":2,
                "rope_parameters":{"full_attention":{"rope_type":"default","rope_theta":5e5},
                "sliding_attention":{"rope_type":"default","rope_theta":500.0}}}"#,
        )
        .unwrap();
        assert_eq!(c.rope.theta, 5e5);
        assert_eq!(c.local_rope.unwrap().theta, 500.0);
        assert_eq!(
            c.layers.iter().map(|l| l.local_rope).collect::<Vec<_>>(),
            [true, false]
        );
    }

    #[test]
    fn bidirectional_attention_is_an_error() {
        let e = parse(r#"{"model_type":"gemma3_text","use_bidirectional_attention":true}"#)
            .unwrap_err();
        assert!(e.to_string().contains("use_bidirectional_attention"), "{e}");
    }
}
