//! Qwen2 (`Qwen2ForCausalLM`, `model_type` `qwen2`): Llama with a bias on the q, k and v
//! projections and an optional sliding window on some layers.
//!
//! Differences from [`super::Llama`] (transformers 4.57's `Qwen2Config`): other size
//! defaults (a 151936-token vocabulary, a 32768-token context); q/k/v biases always, none on
//! o or the MLP; the window (`sliding_window`, default 4096) only when `use_sliding_window`,
//! on the layers `layer_types` marks `sliding_attention` (by default those at index
//! `max_window_layers` and above).

use super::common::{sliding_layers, sliding_window, Biases, Defaults, LlamaLike};
use super::Family;
use crate::model::TransformerConfig;
use crate::Result;
use sieve_text::ConfigJson;

/// `Qwen2Config`'s defaults.
const DEFAULTS: Defaults = Defaults {
    vocab_size: 151936,
    intermediate_size: 22016,
    num_key_value_heads: Some(32),
    max_position_embeddings: 32768,
    ..super::llama::DEFAULTS
};

/// `Qwen2Config`'s `sliding_window`.
const SLIDING_WINDOW: Option<usize> = Some(4096);

/// `Qwen2Config`'s `max_window_layers`.
const MAX_WINDOW_LAYERS: usize = 28;

/// The Qwen2 family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qwen2;

impl Family for Qwen2 {
    fn architecture(&self) -> &'static str {
        "Qwen2ForCausalLM"
    }

    fn model_type(&self) -> &'static str {
        "qwen2"
    }

    fn transformer_config(&self, config: &ConfigJson) -> Result<TransformerConfig> {
        let base = LlamaLike::read(config, &DEFAULTS)?;
        let biases = Biases {
            qkv: true,
            ..Biases::default()
        };
        let windows = windows(config, base.num_layers)?;
        Ok(base.transformer(biases, &windows))
    }
}

/// The window of each layer (shared with Qwen3, whose config reads the same fields).
pub(super) fn windows(config: &ConfigJson, num_layers: usize) -> Result<Vec<Option<usize>>> {
    let window = sliding_window(config, SLIDING_WINDOW)?;
    let window = if config.get("use_sliding_window")?.unwrap_or(false) {
        window
    } else {
        None
    };
    match sliding_layers(config, num_layers)? {
        Some(sliding) => Ok(sliding
            .into_iter()
            .map(|s| if s { window } else { None })
            .collect()),
        None => {
            let first = config
                .get("max_window_layers")?
                .unwrap_or(MAX_WINDOW_LAYERS);
            Ok((0..num_layers)
                .map(|i| if i >= first { window } else { None })
                .collect())
        }
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
    fn qkv_have_a_bias_and_o_has_none() {
        let c = parse(r#"{"architectures":["Qwen2ForCausalLM"],"num_hidden_layers":3}"#).unwrap();
        let a = c.layers[0].attention;
        assert!(a.qkv_bias && !a.o_bias && !c.layers[0].mlp.bias);
        assert_eq!(c.vocab_size(), 151936);
    }

    #[test]
    fn windows_only_when_enabled_and_on_the_layers_chosen() {
        assert_eq!(
            windows(r#"{"model_type":"qwen2","num_hidden_layers":3,"sliding_window":8}"#),
            vec![None; 3]
        );
        assert_eq!(
            windows(
                r#"{"model_type":"qwen2","num_hidden_layers":3,"sliding_window":8,
                    "use_sliding_window":true,"max_window_layers":1}"#
            ),
            vec![None, Some(8), Some(8)]
        );
        assert_eq!(
            windows(
                r#"{"model_type":"qwen2","num_hidden_layers":2,"sliding_window":8,
                    "use_sliding_window":true,
                    "layer_types":["sliding_attention","full_attention"]}"#
            ),
            vec![Some(8), None]
        );
    }

    #[test]
    fn malformed_layer_types_are_named() {
        for (text, needle) in [
            (
                r#"{"model_type":"qwen2","num_hidden_layers":2,"layer_types":["full_attention"]}"#,
                "1 entries for 2 layers",
            ),
            (
                r#"{"model_type":"qwen2","num_hidden_layers":1,"layer_types":["chunked_attention"]}"#,
                "`chunked_attention` is not supported",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
        }
    }
}
