//! Tensor names: llama.cpp's GGUF names (`blk.3.attn_q.weight`) against the Hugging Face
//! names the model loader asks for (`model.layers.3.self_attn.q_proj.weight`), as
//! `convert_hf_to_gguf.py` maps them (gguf-py's `tensor_mapping.py`).
//!
//! One name differs by layout: a Llama-style layer has two norms and calls the MLP's input
//! norm `post_attention_layernorm` (GGUF `ffn_norm`); a Gemma "sandwich" layer has four, and
//! there `post_attention_layernorm` normalizes the attention's output (GGUF
//! `post_attention_norm`) while `pre_feedforward_layernorm` is the MLP's input (`ffn_norm`).

/// Names outside the layers: (Hugging Face, GGUF).
const GLOBAL: [(&str, &str); 3] = [
    ("model.embed_tokens.weight", "token_embd.weight"),
    ("model.norm.weight", "output_norm.weight"),
    ("lm_head.weight", "output.weight"),
];

/// Suffixes inside layer `i` (`model.layers.{i}.` against `blk.{i}.`), for every layout.
const LAYER: [(&str, &str); 17] = [
    ("input_layernorm.weight", "attn_norm.weight"),
    ("self_attn.q_proj.weight", "attn_q.weight"),
    ("self_attn.q_proj.bias", "attn_q.bias"),
    ("self_attn.k_proj.weight", "attn_k.weight"),
    ("self_attn.k_proj.bias", "attn_k.bias"),
    ("self_attn.v_proj.weight", "attn_v.weight"),
    ("self_attn.v_proj.bias", "attn_v.bias"),
    ("self_attn.o_proj.weight", "attn_output.weight"),
    ("self_attn.o_proj.bias", "attn_output.bias"),
    ("self_attn.q_norm.weight", "attn_q_norm.weight"),
    ("self_attn.k_norm.weight", "attn_k_norm.weight"),
    ("mlp.gate_proj.weight", "ffn_gate.weight"),
    ("mlp.gate_proj.bias", "ffn_gate.bias"),
    ("mlp.up_proj.weight", "ffn_up.weight"),
    ("mlp.up_proj.bias", "ffn_up.bias"),
    ("mlp.down_proj.weight", "ffn_down.weight"),
    ("mlp.down_proj.bias", "ffn_down.bias"),
];

/// The norm after attention in a Llama-style layer (the MLP's input norm).
const PLAIN_NORMS: [(&str, &str); 1] = [("post_attention_layernorm.weight", "ffn_norm.weight")];

/// The norms of a Gemma sandwich layer besides `input_layernorm`.
const SANDWICH_NORMS: [(&str, &str); 3] = [
    (
        "post_attention_layernorm.weight",
        "post_attention_norm.weight",
    ),
    ("pre_feedforward_layernorm.weight", "ffn_norm.weight"),
    ("post_feedforward_layernorm.weight", "post_ffw_norm.weight"),
];

/// The (Hugging Face, GGUF) suffix pairs of a layer.
fn layer_pairs(sandwich: bool) -> impl Iterator<Item = (&'static str, &'static str)> {
    let norms: &[(&str, &str)] = if sandwich {
        &SANDWICH_NORMS
    } else {
        &PLAIN_NORMS
    };
    LAYER.iter().chain(norms).copied()
}

/// The GGUF name of the Hugging Face tensor `hf`, or `None` for a name GGUF files do not
/// have.
pub(crate) fn to_gguf(hf: &str, sandwich: bool) -> Option<String> {
    if let Some(&(_, g)) = GLOBAL.iter().find(|(h, _)| *h == hf) {
        return Some(g.to_string());
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (index, suffix) = rest.split_once('.')?;
    let index: usize = index.parse().ok()?;
    let (_, g) = layer_pairs(sandwich).find(|(h, _)| *h == suffix)?;
    Some(format!("blk.{index}.{g}"))
}

/// The Hugging Face name of the GGUF tensor `gguf`, or `None` for a tensor the model does
/// not load (e.g. `rope_freqs.weight`, read by the configuration instead).
pub(crate) fn to_hf(gguf: &str, sandwich: bool) -> Option<String> {
    if let Some(&(h, _)) = GLOBAL.iter().find(|(_, g)| *g == gguf) {
        return Some(h.to_string());
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (index, suffix) = rest.split_once('.')?;
    let index: usize = index.parse().ok()?;
    let (h, _) = layer_pairs(sandwich).find(|(_, g)| *g == suffix)?;
    Some(format!("model.layers.{index}.{h}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_both_ways() {
        for sandwich in [false, true] {
            for hf in [
                "model.embed_tokens.weight",
                "lm_head.weight",
                "model.layers.11.self_attn.k_proj.bias",
                "model.layers.0.post_attention_layernorm.weight",
                "model.layers.2.mlp.down_proj.weight",
            ] {
                let g = to_gguf(hf, sandwich).unwrap();
                assert_eq!(to_hf(&g, sandwich).as_deref(), Some(hf), "{g}");
            }
        }
        assert_eq!(
            to_gguf("model.layers.3.post_attention_layernorm.weight", false).unwrap(),
            "blk.3.ffn_norm.weight"
        );
        assert_eq!(
            to_gguf("model.layers.3.post_attention_layernorm.weight", true).unwrap(),
            "blk.3.post_attention_norm.weight"
        );
        assert_eq!(
            to_gguf("model.layers.3.pre_feedforward_layernorm.weight", true).unwrap(),
            "blk.3.ffn_norm.weight"
        );
        assert_eq!(to_gguf("model.layers.x.mlp.up_proj.weight", false), None);
        assert_eq!(to_hf("rope_freqs.weight", false), None);
        assert_eq!(
            to_gguf("model.layers.0.pre_feedforward_layernorm.weight", false),
            None
        );
    }
}
