//! Mistral (`MistralForCausalLM`, `model_type` `mistral`): Llama with a sliding attention
//! window on every layer and no bias options.
//!
//! Differences from [`super::Llama`] (transformers 4.57's `MistralConfig`): other size
//! defaults (8 key/value heads, a 131072-token context), and `sliding_window` (default 4096,
//! `null` turns it off) on every layer.

use super::common::{sliding_window, Biases, Defaults, LlamaLike};
use super::Family;
use crate::model::TransformerConfig;
use crate::Result;
use sieve_text::ConfigJson;

/// `MistralConfig`'s defaults (Mistral 7B's sizes).
const DEFAULTS: Defaults = Defaults {
    intermediate_size: 14336,
    num_key_value_heads: Some(8),
    max_position_embeddings: 4096 * 32,
    ..super::llama::DEFAULTS
};

/// `MistralConfig`'s `sliding_window`.
const SLIDING_WINDOW: Option<usize> = Some(4096);

/// The Mistral family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mistral;

impl Family for Mistral {
    fn architecture(&self) -> &'static str {
        "MistralForCausalLM"
    }

    fn model_type(&self) -> &'static str {
        "mistral"
    }

    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig> {
        let base = LlamaLike::read(config, &DEFAULTS)?;
        let window = sliding_window(config, SLIDING_WINDOW)?;
        Ok(base.transformer(Biases::default(), &vec![window; base.num_layers]))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;

    fn windows(text: &str) -> Vec<Option<usize>> {
        let c = parse(text).unwrap();
        c.layers
            .iter()
            .map(|l| l.attention.sliding_window)
            .collect()
    }

    #[test]
    fn the_window_defaults_to_4096_and_null_turns_it_off() {
        let text = r#"{"model_type":"mistral","num_hidden_layers":2}"#;
        assert_eq!(windows(text), vec![Some(4096); 2]);
        let c = parse(text).unwrap();
        assert_eq!(c.layers[0].attention.num_kv_heads, 8);
        assert_eq!(c.context_len, 131072);
        assert_eq!(
            windows(r#"{"model_type":"mistral","num_hidden_layers":2,"sliding_window":null}"#),
            vec![None; 2]
        );
    }

    #[test]
    fn llama_bias_options_do_not_apply() {
        let c = parse(r#"{"model_type":"mistral","attention_bias":true,"mlp_bias":true}"#).unwrap();
        let l = c.layers[0];
        assert!(!l.attention.qkv_bias && !l.attention.o_bias && !l.mlp.bias);
    }
}
