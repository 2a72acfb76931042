//! A GGUF file's `{arch}.*` metadata as the `config.json` a Hugging Face directory of the same
//! model would have, so that the family files (`crate::families`) read it unchanged: the
//! values llama.cpp's `convert_hf_to_gguf.py` wrote are put back under transformers' names.
//!
//! | GGUF key (`{arch}.` omitted) | `config.json` field |
//! |---|---|
//! | `block_count` | `num_hidden_layers` |
//! | `embedding_length` | `hidden_size` |
//! | `feed_forward_length` | `intermediate_size` |
//! | `attention.head_count`, `attention.head_count_kv` | `num_attention_heads`, `num_key_value_heads` |
//! | `attention.key_length` (= `value_length`) | `head_dim` |
//! | `attention.layer_norm_rms_epsilon` | `rms_norm_eps` |
//! | `context_length` | `max_position_embeddings` |
//! | `rope.freq_base` | `rope_theta` |
//! | `rope.scaling.type` `linear`, `rope.scaling.factor` | `rope_scaling` |
//! | `attention.sliding_window` (Gemma) | `sliding_window`, `layer_types` as llama.cpp lays them |
//! | `attn_logit_softcapping`, `final_logit_softcapping` (Gemma 2) | the same names |
//! | rows of `token_embd.weight` | `vocab_size` |
//! | `output.weight` absent | `tie_word_embeddings` |
//! | `blk.0.attn_q.bias` / `blk.0.ffn_up.bias` present | `attention_bias` / `mlp_bias` |
//! | `tokenizer.ggml.bos_token_id`, `eos_token_id` | `bos_token_id`, `eos_token_id` |
//!
//! What a GGUF file cannot say is llama.cpp's fixed choice: Gemma's attention scale is
//! `key_length^-0.5` (`hidden/heads` for the 27B models, as llama.cpp decides by size),
//! Gemma 3's sliding layers use base 10 000 and five of every six layers. Llama 3.1/3.2's rope
//! scaling is stored as per-dimension factors (`rope_freqs.weight`); the `llama3` parameters
//! that give them are recovered (`llama3_scaling`). Anything the families would silently do
//! differently is an error naming the key: a partial rotary dimension, YaRN, factors that are
//! not Llama 3's, experts, per-layer head counts.

use serde_json::{json, Map, Value as Json};
use sieve_gguf::{GgufModel, Metadata};
use sieve_text::ConfigJson;

use crate::{Error, Result};

/// The architectures (`general.architecture`) loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// `llama`: Llama 1–3, Mistral, SmolLM, TinyLlama (q/k rows permuted by the converter).
    Llama,
    /// `qwen2`.
    Qwen2,
    /// `qwen3`.
    Qwen3,
    /// `gemma2`.
    Gemma2,
    /// `gemma3`.
    Gemma3,
}

impl Arch {
    /// Every architecture, for error messages.
    pub const ALL: [Arch; 5] = [
        Arch::Llama,
        Arch::Qwen2,
        Arch::Qwen3,
        Arch::Gemma2,
        Arch::Gemma3,
    ];

    /// The `general.architecture` value.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
            Arch::Gemma2 => "gemma2",
            Arch::Gemma3 => "gemma3",
        }
    }

    /// The transformers class the family files know it by.
    fn hf_architecture(self) -> &'static str {
        match self {
            Arch::Llama => "LlamaForCausalLM",
            Arch::Qwen2 => "Qwen2ForCausalLM",
            Arch::Qwen3 => "Qwen3ForCausalLM",
            Arch::Gemma2 => "Gemma2ForCausalLM",
            Arch::Gemma3 => "Gemma3ForCausalLM",
        }
    }

    /// Whether layers have Gemma's four norms.
    pub fn sandwich(self) -> bool {
        matches!(self, Arch::Gemma2 | Arch::Gemma3)
    }

    /// Whether the converter stored every norm weight as `w + 1` (Gemma), so the loader must
    /// not add the 1 again.
    pub fn norms_hold_unit_offset(self) -> bool {
        self.sandwich()
    }

    /// Whether the converter permuted the q and k rows (`LlamaModel.permute`).
    pub fn permuted_qk(self) -> bool {
        self == Arch::Llama
    }
}

/// The architecture of `meta`.
///
/// # Errors
/// [`Error::UnsupportedGguf`] for an absent or unknown `general.architecture`.
pub(crate) fn arch_of(meta: &Metadata, path: &std::path::Path) -> Result<Arch> {
    let name = meta.get_str("general.architecture")?.unwrap_or("");
    Arch::ALL
        .into_iter()
        .find(|a| a.name() == name)
        .ok_or_else(|| Error::UnsupportedGguf {
            path: path.to_path_buf(),
            what: "metadata `general.architecture`".into(),
            message: format!(
                "`{name}` is not supported; supported: {}",
                Arch::ALL.map(Arch::name).join(", ")
            ),
        })
}

/// Reads the metadata of `model` (architecture `arch`) as a `config.json`.
///
/// # Errors
/// [`Error::Gguf`] for a required key that is absent or of the wrong type,
/// [`Error::UnsupportedGguf`] for a value the families cannot express.
pub(crate) fn config_json(model: &GgufModel, arch: Arch) -> Result<ConfigJson> {
    let meta = model.metadata();
    let path = model.first().path();
    let a = arch.name();
    let key = |k: &str| format!("{a}.{k}");
    let unsupported = |k: &str, message: String| Error::UnsupportedGguf {
        path: path.to_path_buf(),
        what: format!("metadata `{k}`"),
        message,
    };
    let required = |k: &str| -> Result<u32> {
        meta.get_u32(&key(k))?
            .ok_or_else(|| Error::Gguf(meta.error(&key(k), "required, absent")))
    };
    let layers = required("block_count")?;
    // Every layer has tensors: a count past the tensors is refused before it sizes anything.
    let tensors = model.tensors().count() as u64;
    if u64::from(layers) > tensors {
        return Err(unsupported(
            &key("block_count"),
            format!("{layers} layers, but the file holds only {tensors} tensors"),
        ));
    }
    let hidden = required("embedding_length")?;
    let heads = required("attention.head_count")?;
    let kv_heads = meta
        .get_u32(&key("attention.head_count_kv"))?
        .unwrap_or(heads);
    let eps = meta
        .get_f32(&key("attention.layer_norm_rms_epsilon"))?
        .ok_or_else(|| {
            Error::Gguf(meta.error(&key("attention.layer_norm_rms_epsilon"), "required, absent"))
        })?;
    let mut c = Map::new();
    c.insert("architectures".into(), json!([arch.hf_architecture()]));
    c.insert("num_hidden_layers".into(), json!(layers));
    c.insert("hidden_size".into(), json!(hidden));
    c.insert(
        "intermediate_size".into(),
        json!(required("feed_forward_length")?),
    );
    c.insert("num_attention_heads".into(), json!(heads));
    c.insert("num_key_value_heads".into(), json!(kv_heads));
    c.insert("rms_norm_eps".into(), json!(f64::from(eps)));
    c.insert(
        "max_position_embeddings".into(),
        json!(required("context_length")?),
    );
    let theta = meta.get_f32(&key("rope.freq_base"))?.unwrap_or(10_000.0);
    c.insert("rope_theta".into(), json!(f64::from(theta)));

    let head_dim = meta.get_u32(&key("attention.key_length"))?;
    if let (Some(k), Some(v)) = (head_dim, meta.get_u32(&key("attention.value_length"))?) {
        if k != v {
            return Err(unsupported(
                &key("attention.value_length"),
                format!("{v} differs from `attention.key_length` {k}"),
            ));
        }
    }
    let head_dim = match head_dim {
        Some(d) => d,
        None if heads > 0 => hidden / heads,
        None => 0,
    };
    c.insert("head_dim".into(), json!(head_dim));
    if let Some(rope_dim) = meta.get_u32(&key("rope.dimension_count"))? {
        if rope_dim != head_dim {
            return Err(unsupported(
                &key("rope.dimension_count"),
                format!("{rope_dim} rotary dimensions of a head of {head_dim} (partial rotary) is not supported"),
            ));
        }
    }
    if let Some(n) = meta.get_u32(&key("expert_count"))? {
        if n > 0 {
            return Err(unsupported(
                &key("expert_count"),
                format!("{n} experts: mixture-of-experts models are not supported"),
            ));
        }
    }
    if let Some(scaling) = rope_scaling(meta, &key, &unsupported)? {
        c.insert("rope_scaling".into(), scaling);
    }
    if let Some((file, info)) = model.tensor(ROPE_FREQS) {
        if c.contains_key("rope_scaling") {
            return Err(unsupported(
                ROPE_FREQS,
                "given together with `rope.scaling.type`".into(),
            ));
        }
        let factors: Vec<f32> = match info.ggml_type {
            sieve_gguf::GgmlType::F32 => file
                .tensor_bytes(info)
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            other => {
                return Err(unsupported(
                    ROPE_FREQS,
                    format!("stored as {other}, expected F32"),
                ))
            }
        };
        let original = meta.get_u32(&key("rope.scaling.original_context_length"))?;
        let scaling = llama3_scaling(&factors, head_dim, f64::from(theta), original)
            .ok_or_else(|| {
                unsupported(
                    ROPE_FREQS,
                    "per-dimension rope factors that are not Llama 3's rope scaling (low 1, high 4, any factor and original context)".into(),
                )
            })?;
        c.insert("rope_scaling".into(), scaling);
    }

    let embd = model
        .tensor("token_embd.weight")
        .map(|(_, t)| t.dims.clone())
        .ok_or_else(|| Error::MissingTensor {
            path: path.to_path_buf(),
            name: "token_embd.weight".into(),
        })?;
    let vocab = embd.get(1).copied().unwrap_or(0);
    if let Some(n) = meta.get_u64(&key("vocab_size"))? {
        if n != vocab {
            return Err(unsupported(
                &key("vocab_size"),
                format!("{n}, but token_embd.weight has {vocab} rows"),
            ));
        }
    }
    c.insert("vocab_size".into(), json!(vocab));
    c.insert(
        "tie_word_embeddings".into(),
        json!(model.tensor("output.weight").is_none()),
    );
    let has = |name: &str| model.tensor(name).is_some();
    c.insert("attention_bias".into(), json!(has("blk.0.attn_q.bias")));
    c.insert("mlp_bias".into(), json!(has("blk.0.ffn_up.bias")));
    for (field, k) in [
        ("bos_token_id", "tokenizer.ggml.bos_token_id"),
        ("eos_token_id", "tokenizer.ggml.eos_token_id"),
    ] {
        if let Some(id) = meta.get_u32(k)? {
            c.insert(field.into(), json!(id));
        }
    }
    match arch {
        Arch::Llama | Arch::Qwen2 | Arch::Qwen3 => {}
        Arch::Gemma2 | Arch::Gemma3 => gemma(meta, arch, layers, hidden, heads, head_dim, &mut c)?,
    }
    let text = Json::Object(c).to_string();
    Ok(ConfigJson::from_json(path, &text)?)
}

/// The tensor of per-dimension rope frequency factors (Llama 3.1/3.2).
const ROPE_FREQS: &str = "rope_freqs.weight";

/// The `llama3` `rope_scaling` whose factors the converter wrote as `factors` (one per pair of
/// a head of `head_dim`), or `None` when no parameters tried give them. GGUF keeps only the
/// factors (llama.cpp's converter writes no `rope.scaling.original_context_length`), and they
/// fix only `factor` and two ratios of the other three parameters. Low 1 and high 4 (every
/// Llama 3.x model's) are assumed; the original context is the file's
/// `rope.scaling.original_context_length` when it has one, else 8192 (Llama 3's) or the one
/// the factors give ([`original_contexts`]). Parameters are kept when they give every factor
/// to within `1e-6` relative.
fn llama3_scaling(
    factors: &[f32],
    head_dim: u32,
    theta: f64,
    original: Option<u32>,
) -> Option<Json> {
    let half = head_dim as usize / 2;
    if factors.len() != half || half == 0 {
        return None;
    }
    let factor = f64::from(factors.iter().copied().fold(f32::MIN, f32::max));
    let (low, high) = (LLAMA3_LOW, LLAMA3_HIGH);
    let wavelens: Vec<f64> = (0..half)
        .map(|i| 2.0 * std::f64::consts::PI * theta.powf(2.0 * i as f64 / f64::from(head_dim)))
        .collect();
    let gives_the_factors = |old: f64| {
        let (low_wavelen, high_wavelen) = (old / low, old / high);
        factors.iter().zip(&wavelens).all(|(&got, &wavelen)| {
            let want = if wavelen < high_wavelen {
                1.0
            } else if wavelen > low_wavelen {
                factor
            } else {
                let smooth = (old / wavelen - low) / (high - low);
                1.0 / ((1.0 - smooth) / factor + smooth)
            };
            (f64::from(got) - want).abs() <= 1e-6 * want.abs()
        })
    };
    let candidates = match original {
        Some(n) => vec![f64::from(n)],
        None => original_contexts(factors, factor, &wavelens),
    };
    let old = candidates
        .into_iter()
        .find(|&old| old.is_finite() && old > 0.0 && gives_the_factors(old))?;
    Some(json!({
        "rope_type": "llama3",
        "factor": factor,
        "low_freq_factor": low,
        "high_freq_factor": high,
        "original_max_position_embeddings": old,
    }))
}

/// Llama 3's `low_freq_factor`.
const LLAMA3_LOW: f64 = 1.0;
/// Llama 3's `high_freq_factor`.
const LLAMA3_HIGH: f64 = 4.0;

/// The original contexts to try, in order, for factors written without one: Llama 3's 8192,
/// then the one each factor strictly between 1 and `factor` gives (its dimension's smoothing
/// weight `s` solves `1/g = (1 - s)/factor + s`, and `s = (old/wavelen - low)/(high - low)`;
/// rounded to a whole number first, as configurations state it), and where no factor lies
/// between, one inside the range the others allow (every dimension of factor 1 needs
/// `wavelen < old/high`, every one of `factor` needs `wavelen > old/low`; any `old` there gives
/// the same factors).
fn original_contexts(factors: &[f32], factor: f64, wavelens: &[f64]) -> Vec<f64> {
    let (low, high) = (LLAMA3_LOW, LLAMA3_HIGH);
    let mut out = vec![8192.0];
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
    let (mut above, mut below) = (0f64, f64::INFINITY);
    for (&g, &wavelen) in factors.iter().zip(wavelens) {
        let g = f64::from(g);
        if near(g, 1.0) {
            above = above.max(wavelen * high);
        } else if near(g, factor) {
            below = below.min(wavelen * low);
        } else {
            let smooth = (1.0 / g - 1.0 / factor) / (1.0 - 1.0 / factor);
            let old = wavelen * (low + smooth * (high - low));
            out.extend([old.round(), old]);
        }
    }
    if out.len() == 1 && above < below {
        // The smallest power of two in the open range, else its middle.
        let mut p = 1f64;
        while p <= above {
            p *= 2.0;
        }
        out.push(if p < below { p } else { (above + below) / 2.0 });
    }
    out
}

/// `{arch}.rope.scaling.*` as `rope_scaling`, or `None` for none.
fn rope_scaling(
    meta: &Metadata,
    key: &dyn Fn(&str) -> String,
    unsupported: &dyn Fn(&str, String) -> Error,
) -> Result<Option<Json>> {
    let kind = meta.get_str(&key("rope.scaling.type"))?;
    let factor = meta.get_f32(&key("rope.scaling.factor"))?;
    let linear = |factor: f32| json!({"rope_type": "linear", "factor": f64::from(factor)});
    match (kind, factor) {
        (None | Some("none"), _) => match meta.get_f32(&key("rope.scale_linear"))? {
            Some(f) if f != 1.0 => Ok(Some(linear(f))),
            _ => Ok(None),
        },
        (Some("linear"), Some(f)) => Ok(Some(linear(f))),
        (Some("linear"), None) => Err(unsupported(
            &key("rope.scaling.factor"),
            "absent, but `rope.scaling.type` is linear".into(),
        )),
        (Some(other), _) => Err(unsupported(
            &key("rope.scaling.type"),
            format!("`{other}` is not supported (none and linear are)"),
        )),
    }
}

/// Gemma 2 and 3's fields: softcaps, sliding windows, the attention scale.
fn gemma(
    meta: &Metadata,
    arch: Arch,
    layers: u32,
    hidden: u32,
    heads: u32,
    head_dim: u32,
    c: &mut Map<String, Json>,
) -> Result<()> {
    let a = arch.name();
    let key = |k: &str| format!("{a}.{k}");
    c.insert("hidden_activation".into(), json!("gelu_pytorch_tanh"));
    // llama.cpp scales by 1/sqrt(hidden/heads) for the 27B models, else 1/sqrt(head_dim).
    let is_27b = (arch == Arch::Gemma2 && layers == 46) || (arch == Arch::Gemma3 && layers == 62);
    let scalar = match is_27b {
        true if heads > 0 => hidden / heads,
        _ => head_dim,
    };
    c.insert("query_pre_attn_scalar".into(), json!(scalar));
    for field in ["attn_logit_softcapping", "final_logit_softcapping"] {
        let v = meta.get_f32(&key(field))?.map(f64::from);
        c.insert(field.into(), json!(v));
    }
    let window = meta.get_u32(&key("attention.sliding_window"))?;
    c.insert("sliding_window".into(), json!(window));
    // Which layers slide: llama.cpp's fixed patterns (Gemma 2: even layers; Gemma 3: five of
    // every six), or `attention.sliding_window_pattern` when the file has it.
    let period = match (arch, meta.get(&key("attention.sliding_window_pattern"))) {
        (_, Some(_)) => meta
            .get_u32(&key("attention.sliding_window_pattern"))?
            .unwrap_or(0),
        (Arch::Gemma2, None) => 2,
        _ => 6,
    };
    let types: Vec<&str> = (0..layers)
        .map(
            |i| match window.is_some() && period > 0 && i % period < period - 1 {
                true => "sliding_attention",
                false => "full_attention",
            },
        )
        .collect();
    c.insert("layer_types".into(), json!(types));
    if arch == Arch::Gemma3 {
        let local = meta
            .get_f32(&key("rope.freq_base_swa"))?
            .unwrap_or(10_000.0);
        c.insert("rope_local_base_freq".into(), json!(f64::from(local)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama 3 factors in f32 steps, as the converter computes them (low 1, high 4).
    fn factors(head_dim: usize, theta: f32, factor: f32, old: f32) -> Vec<f32> {
        (0..head_dim / 2)
            .map(|i| {
                let freq = 1.0 / theta.powf((2 * i) as f32 / head_dim as f32);
                let wavelen = (1.0 / freq) * (2.0 * std::f64::consts::PI) as f32;
                if wavelen < old / 4.0 {
                    1.0
                } else if wavelen > old {
                    factor
                } else {
                    let smooth = ((1.0 / wavelen) * old - 1.0) / 3.0;
                    1.0 / ((1.0 - smooth) / factor + smooth)
                }
            })
            .collect()
    }

    fn recovered(f: &[f32], head_dim: u32, theta: f64, original: Option<u32>) -> Option<f64> {
        let scaling = llama3_scaling(f, head_dim, theta, original)?;
        assert_eq!(scaling["low_freq_factor"], 1.0);
        assert_eq!(scaling["high_freq_factor"], 4.0);
        scaling["original_max_position_embeddings"].as_f64()
    }

    #[test]
    fn the_original_context_comes_from_the_factors_when_the_file_does_not_say() {
        // Llama 3.1 8B, Llama 3.2 1B, a 4096 context, the tiny fixture llama-gqa-tied (64).
        for (dim, factor, old) in [(128, 8.0, 8192.0), (64, 32.0, 8192.0), (128, 8.0, 4096.0)]
            .into_iter()
            .chain([(16, 8.0, 64.0), (64, 16.0, 32768.0)])
        {
            let f = factors(dim, 500000.0, factor, old);
            let got = recovered(&f, dim as u32, 500000.0, None);
            assert_eq!(got, Some(f64::from(old)), "head_dim {dim}, context {old}");
            let scaling = llama3_scaling(&f, dim as u32, 500000.0, None).unwrap();
            assert_eq!(scaling["factor"], f64::from(factor));
        }
    }

    #[test]
    fn the_file_s_original_context_is_the_only_one_tried() {
        let f = factors(128, 500000.0, 8.0, 4096.0);
        assert_eq!(recovered(&f, 128, 500000.0, Some(4096)), Some(4096.0));
        assert_eq!(recovered(&f, 128, 500000.0, Some(8192)), None);
    }

    #[test]
    fn factors_that_are_not_llama3_s_are_refused() {
        let mut f = factors(128, 500000.0, 8.0, 8192.0);
        // One factor in the smooth band moved: no single original context gives them all.
        let band = f.iter().position(|&g| g > 1.0 && g < 8.0).unwrap();
        f[band] *= 1.01;
        assert_eq!(recovered(&f, 128, 500000.0, None), None);
        // A factor above 1 among the fastest dimensions.
        let mut f = factors(128, 500000.0, 8.0, 8192.0);
        f[0] = 2.0;
        assert_eq!(recovered(&f, 128, 500000.0, None), None);
        // The wrong count.
        assert_eq!(recovered(&f[1..], 128, 500000.0, None), None);
    }

    #[test]
    fn without_a_factor_in_the_band_any_context_between_gives_the_same_factors() {
        // head_dim 8, theta 10000: wavelengths 6.3, 63, 628, 6283; a context of 300 leaves
        // none in [300/4, 300], so every context in (4 * 63, 628) gives these factors.
        let f = factors(8, 10000.0, 4.0, 300.0);
        assert_eq!(f, [1.0, 1.0, 4.0, 4.0]);
        let old = recovered(&f, 8, 10000.0, None).unwrap();
        assert_eq!(old, 256.0);
        assert_eq!(factors(8, 10000.0, 4.0, old as f32), f);
    }
}
