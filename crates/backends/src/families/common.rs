//! What every Llama-like family reads the same way (transformers' `LlamaConfig` fields), so
//! that a family file states only its defaults and what differs: sizes and heads, `head_dim`,
//! `hidden_act`, `rms_norm_eps`, RoPE, `tie_word_embeddings`, and the `sliding_window` field.

use crate::model::{
    Activation, AttentionConfig, DecoderLayerConfig, EmbeddingConfig, MlpConfig, NormConfig,
    RopeConfig, TransformerConfig,
};
use crate::Result;
use sieve_text::ConfigJson;

use super::rope_scaling::{read_local_rope, read_rope};

/// A family's defaults for fields absent from `config.json` (its transformers config
/// class's `__init__` defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Defaults {
    /// `vocab_size`.
    pub vocab_size: usize,
    /// `hidden_size`.
    pub hidden_size: usize,
    /// `intermediate_size`.
    pub intermediate_size: usize,
    /// `num_hidden_layers`.
    pub num_hidden_layers: usize,
    /// `num_attention_heads`.
    pub num_attention_heads: usize,
    /// `num_key_value_heads`; `None`: as many as `num_attention_heads`.
    pub num_key_value_heads: Option<usize>,
    /// `max_position_embeddings`.
    pub max_position_embeddings: usize,
    /// `rms_norm_eps`.
    pub rms_norm_eps: f64,
    /// `rope_theta`.
    pub rope_theta: f64,
    /// `head_dim`; `None`: `hidden_size / num_attention_heads`.
    pub head_dim: Option<usize>,
    /// `tie_word_embeddings`.
    pub tie_word_embeddings: bool,
    /// The name of the activation field (`hidden_act`; Gemma's `hidden_activation`) and its
    /// default value.
    pub activation: (&'static str, &'static str),
    /// Whether the family rotates sliding layers with a RoPE of their own (Gemma 3); when not,
    /// a `rope_parameters.sliding_attention` that differs from `full_attention` is an error.
    pub local_rope: bool,
}

/// Which projections have a bias (the one place families differ inside a layer so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Biases {
    /// q, k and v projections.
    pub qkv: bool,
    /// The attention output projection.
    pub o: bool,
    /// The MLP projections.
    pub mlp: bool,
}

/// The fields every Llama-like family shares, read and validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LlamaLike {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub max_position_embeddings: usize,
    pub rms_norm_eps: f64,
    pub rope: RopeConfig,
    pub tie_word_embeddings: bool,
    pub activation: Activation,
}

fn positive(c: &ConfigJson, name: &str, default: usize) -> Result<usize> {
    let value = c.get(name)?.unwrap_or(default);
    if value == 0 {
        return Err(c.invalid(format!("`{name}` must be positive")));
    }
    Ok(value)
}

impl LlamaLike {
    /// Reads the shared fields of `c`, with `d` for absent ones.
    ///
    /// # Errors
    /// [`sieve_text::Error::Json`] naming a field of the wrong type;
    /// [`sieve_text::Error::InvalidConfig`] for values no model can have (zero sizes, heads
    /// that do not divide, an odd head width) and options this crate does not implement
    /// (`hidden_act` other than `silu`, `partial_rotary_factor` other than 1, an unsupported
    /// RoPE type).
    pub(crate) fn read(c: &ConfigJson, d: &Defaults) -> Result<Self> {
        let vocab_size = positive(c, "vocab_size", d.vocab_size)?;
        let hidden_size = positive(c, "hidden_size", d.hidden_size)?;
        let intermediate_size = positive(c, "intermediate_size", d.intermediate_size)?;
        let num_layers = positive(c, "num_hidden_layers", d.num_hidden_layers)?;
        let num_heads = positive(c, "num_attention_heads", d.num_attention_heads)?;
        let kv_default = d.num_key_value_heads.unwrap_or(num_heads);
        let num_kv_heads = positive(c, "num_key_value_heads", kv_default)?;
        if num_heads % num_kv_heads != 0 {
            return Err(c.invalid(format!(
                "`num_attention_heads` ({num_heads}) must be a multiple of `num_key_value_heads` ({num_kv_heads})"
            )));
        }
        let head_dim = match c.get::<usize>("head_dim")?.or(d.head_dim) {
            Some(0) => return Err(c.invalid("`head_dim` must be positive")),
            Some(h) => h,
            None if hidden_size % num_heads == 0 => hidden_size / num_heads,
            None => {
                return Err(c.invalid(format!(
                    "`hidden_size` ({hidden_size}) is not a multiple of `num_attention_heads` ({num_heads}) and no `head_dim` is given"
                )))
            }
        };
        if head_dim % 2 != 0 {
            return Err(c.invalid(format!("`head_dim` ({head_dim}) must be even for RoPE")));
        }
        let (act_field, act_default) = d.activation;
        let act = c.get::<String>(act_field)?;
        let activation = match act.as_deref().unwrap_or(act_default) {
            "silu" => Activation::Silu,
            "gelu_pytorch_tanh" => Activation::GeluTanh,
            other => {
                return Err(c.invalid(format!(
                    "`{act_field}` `{other}` is not supported (only `silu`, `gelu_pytorch_tanh`)"
                )))
            }
        };
        if let Some(f) = c.get::<f64>("partial_rotary_factor")? {
            if f != 1.0 {
                return Err(c.invalid("`partial_rotary_factor` other than 1 is not supported"));
            }
        }
        let max_position_embeddings =
            positive(c, "max_position_embeddings", d.max_position_embeddings)?;
        let rms_norm_eps = c.get("rms_norm_eps")?.unwrap_or(d.rms_norm_eps);
        if !(rms_norm_eps.is_finite() && rms_norm_eps > 0.0) {
            return Err(c.invalid(format!("`rms_norm_eps` ({rms_norm_eps}) must be positive")));
        }
        let (theta, scaling) = read_rope(c, d.rope_theta)?;
        if !d.local_rope {
            if let Some(local) = read_local_rope(c, d.rope_theta)? {
                if local != (theta, scaling) {
                    return Err(c.invalid(
                        "`rope_parameters.sliding_attention` differs from `full_attention`; \
                         a RoPE per layer type is not supported by this family",
                    ));
                }
            }
        }
        Ok(LlamaLike {
            vocab_size,
            hidden_size,
            intermediate_size,
            num_layers,
            num_heads,
            num_kv_heads,
            head_dim,
            max_position_embeddings,
            rms_norm_eps,
            rope: RopeConfig {
                head_dim,
                theta,
                scaling,
            },
            tie_word_embeddings: c
                .get("tie_word_embeddings")?
                .unwrap_or(d.tie_word_embeddings),
            activation,
        })
    }

    /// The pre-norm decoder of these sizes, with `biases`, and `windows[i]` the sliding
    /// window of layer `i` (`windows` has one entry per layer): Llama's layer (no q/k norm,
    /// scale `head_dim^-0.5`, no softcaps, two norms per layer, one RoPE), which a family
    /// edits where it differs.
    pub(crate) fn transformer(
        &self,
        biases: Biases,
        windows: &[Option<usize>],
    ) -> TransformerConfig {
        debug_assert_eq!(windows.len(), self.num_layers);
        let norm = NormConfig::new(self.hidden_size, self.rms_norm_eps);
        let layer = |sliding_window| DecoderLayerConfig {
            attention: AttentionConfig {
                hidden_size: self.hidden_size,
                num_heads: self.num_heads,
                num_kv_heads: self.num_kv_heads,
                head_dim: self.head_dim,
                qkv_bias: biases.qkv,
                o_bias: biases.o,
                sliding_window,
                qk_norm: None,
                scale: (self.head_dim as f64).powf(-0.5),
                logit_softcap: None,
            },
            mlp: MlpConfig {
                hidden_size: self.hidden_size,
                intermediate_size: self.intermediate_size,
                bias: biases.mlp,
                activation: self.activation,
            },
            norm,
            sandwich_norms: false,
            local_rope: false,
        };
        TransformerConfig {
            embedding: EmbeddingConfig {
                vocab_size: self.vocab_size,
                hidden_size: self.hidden_size,
                tied: self.tie_word_embeddings,
                scale: None,
            },
            layers: windows.iter().map(|&w| layer(w)).collect(),
            norm,
            rope: self.rope,
            local_rope: None,
            final_logit_softcap: None,
            context_len: self.max_position_embeddings,
        }
    }
}

/// `sliding_window`: `default` when absent, `None` when `null`.
///
/// # Errors
/// [`sieve_text::Error::Json`] for another type, [`sieve_text::Error::InvalidConfig`] for 0.
pub(crate) fn sliding_window(c: &ConfigJson, default: Option<usize>) -> Result<Option<usize>> {
    let window = c
        .get_nullable::<usize>("sliding_window")?
        .unwrap_or(default);
    if window == Some(0) {
        return Err(c.invalid("`sliding_window` must be positive or null"));
    }
    Ok(window)
}

/// `layer_types` read as "is layer `i` sliding" (`sliding_attention` / `full_attention`), or
/// `None` when the field is absent.
///
/// # Errors
/// [`sieve_text::Error::InvalidConfig`] for a list of the wrong length or another layer type.
pub(crate) fn sliding_layers(c: &ConfigJson, num_layers: usize) -> Result<Option<Vec<bool>>> {
    let Some(types) = c.get::<Vec<String>>("layer_types")? else {
        return Ok(None);
    };
    if types.len() != num_layers {
        return Err(c.invalid(format!(
            "`layer_types` has {} entries for {num_layers} layers",
            types.len()
        )));
    }
    types
        .iter()
        .map(|t| match t.as_str() {
            "sliding_attention" => Ok(true),
            "full_attention" => Ok(false),
            other => Err(c.invalid(format!("`layer_types` entry `{other}` is not supported"))),
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}
