//! The `{arch}.*` and `general.*` keys beyond the shape of the model: Gemma's, the rope
//! factors of Llama 3 scaling (computed as `convert_hf_to_gguf.py` computes them), and the
//! default sampling settings of `generation_config.json`.

use std::path::Path;

use sieve_gguf::{Value, Writer};

use crate::gguf::config::Arch;
use crate::model::RopeScaling;

/// The keys only Gemma files have, or why the model cannot be expressed with them: the
/// softcaps, the sliding window and which layers use it (a period `p`: layer `i` slides when
/// `i mod p < p − 1`; Gemma 2 must alternate, as llama.cpp assumes), Gemma 3's local rope
/// base, and an attention scale equal to the one the reader derives.
pub(super) fn gemma_metadata(
    w: &mut Writer<'_>,
    arch: Arch,
    config: &crate::TransformerConfig,
) -> std::result::Result<(), String> {
    let a = arch.name();
    let layers = &config.layers;
    let first = &layers[0].attention;
    let window = layers.iter().find_map(|l| l.attention.sliding_window);
    if layers.iter().any(|l| {
        l.attention
            .sliding_window
            .is_some_and(|s| Some(s) != window)
    }) {
        return Err("layers with different sliding windows".into());
    }
    let sliding: Vec<bool> = layers
        .iter()
        .map(|l| l.attention.sliding_window.is_some())
        .collect();
    let period = (2..=layers.len() + 1).find(|&p| {
        sliding
            .iter()
            .enumerate()
            .all(|(i, &s)| s == (i % p < p - 1))
    });
    match (window, period, arch) {
        (None, _, _) => {}
        (Some(_), Some(2), Arch::Gemma2) => {}
        (Some(_), Some(p), Arch::Gemma3) => {
            if p != 6 {
                w.metadata(
                    format!("{a}.attention.sliding_window_pattern"),
                    Value::U32(p as u32),
                );
            }
        }
        _ => {
            return Err(format!(
                "sliding layers {sliding:?} follow no pattern GGUF states"
            ))
        }
    }
    if let Some(window) = window {
        w.metadata(
            format!("{a}.attention.sliding_window"),
            Value::U32(window as u32),
        );
    }
    let is_27b = (arch == Arch::Gemma2 && layers.len() == 46)
        || (arch == Arch::Gemma3 && layers.len() == 62);
    let scalar = match is_27b {
        true => config.hidden_size() / first.num_heads.max(1),
        false => first.head_dim,
    };
    if layers
        .iter()
        .any(|l| l.attention.scale != (scalar as f64).powf(-0.5))
    {
        return Err(format!(
            "an attention scale other than {scalar}^-0.5 (query_pre_attn_scalar), which GGUF cannot state"
        ));
    }
    if let Some(cap) = first.logit_softcap {
        w.metadata(
            format!("{a}.attn_logit_softcapping"),
            Value::F32(cap as f32),
        );
    }
    if let Some(cap) = config.final_logit_softcap {
        w.metadata(
            format!("{a}.final_logit_softcapping"),
            Value::F32(cap as f32),
        );
    }
    if let Some(local) = &config.local_rope {
        if local.scaling != RopeScaling::None {
            return Err("a scaled local rope".into());
        }
        w.metadata(
            format!("{a}.rope.freq_base_swa"),
            Value::F32(local.theta as f32),
        );
    }
    Ok(())
}

/// The per-pair rope factors the converter writes for `llama3` scaling (low frequency factor
/// 1, high 4), with its arithmetic: every step on a float32 tensor is rounded to `f32` (a
/// Python number meets it as an `f32`; `a / tensor` is `a · (1 / tensor)`), so the factors
/// are the converter's to the bit.
pub(super) fn llama3_factors(head_dim: usize, theta: f64, factor: f64, original: f64) -> Vec<f32> {
    let (low, high) = (1.0f32, 4.0f32);
    let low_wavelen = (original / f64::from(low)) as f32;
    let high_wavelen = (original / f64::from(high)) as f32;
    let (factor, original) = (factor as f32, original as f32);
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    (0..head_dim / 2)
        .map(|i| {
            let exponent = (2 * i) as f32 / head_dim as f32;
            let freq = 1.0 / (theta as f32).powf(exponent);
            let wavelen = (1.0 / freq) * two_pi;
            if wavelen < high_wavelen {
                1.0
            } else if wavelen > low_wavelen {
                factor
            } else {
                let smooth = ((1.0 / wavelen) * original - low) / (high - low);
                1.0 / ((1.0 - smooth) / factor + smooth)
            }
        })
        .collect()
}

/// Writes `general.sampling.*` from `generation_config.json` of `dir`, as the converter does
/// (llama.cpp's tools take them as their default sampling settings): `top_k`,
/// `penalty_last_n` and `mirostat` as `i32`; `top_p`, `min_p`, `xtc_probability`,
/// `xtc_threshold`, `temperature` (`temp`), `penalty_repeat` (else `repetition_penalty`),
/// `mirostat_tau` and `mirostat_eta` as `f32`; `sequence` as a string. A missing file or
/// field, or a value not of its kind (`null`, a fraction where a whole number is due), writes
/// nothing: these are hints, not the model.
pub(super) fn sampling_metadata(w: &mut Writer<'_>, dir: &Path) {
    let Ok(text) = std::fs::read_to_string(dir.join("generation_config.json")) else {
        return;
    };
    let Ok(serde_json::Value::Object(config)) = serde_json::from_str(&text) else {
        return;
    };
    let key = |name: &str| format!("general.sampling.{name}");
    if let Some(s) = config.get("sequence").and_then(|v| v.as_str()) {
        w.metadata(key("sequence"), Value::String(s.to_string()));
    }
    for (field, name) in [
        ("top_k", "top_k"),
        ("penalty_last_n", "penalty_last_n"),
        ("mirostat", "mirostat"),
    ] {
        let whole = config
            .get(field)
            .and_then(|v| v.as_i64())
            .and_then(|v| i32::try_from(v).ok());
        if let Some(v) = whole {
            w.metadata(key(name), Value::I32(v));
        }
    }
    let repeat = match config.contains_key("penalty_repeat") {
        true => "penalty_repeat",
        false => "repetition_penalty",
    };
    for (field, name) in [
        ("top_p", "top_p"),
        ("min_p", "min_p"),
        ("xtc_probability", "xtc_probability"),
        ("xtc_threshold", "xtc_threshold"),
        ("temperature", "temp"),
        (repeat, "penalty_repeat"),
        ("mirostat_tau", "mirostat_tau"),
        ("mirostat_eta", "mirostat_eta"),
    ] {
        if let Some(v) = config.get(field).and_then(|v| v.as_f64()) {
            w.metadata(key(name), Value::F32(v as f32));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{llama3_factors, sampling_metadata};
    use sieve_gguf::{GgufFile, Value, Writer};

    /// The converter's factors (`tools/gguf/rope_factors.py`, torch's float32 arithmetic): ones
    /// below the band `first ..`, the smoothed `band` bits, `factor` past it.
    fn expected(n: usize, first: usize, band: &[u32], factor: f32) -> Vec<u32> {
        (0..n)
            .map(|i| match i {
                i if i < first => 1f32.to_bits(),
                i if i < first + band.len() => band[i - first],
                _ => factor.to_bits(),
            })
            .collect()
    }

    #[test]
    fn llama3_factors_are_the_converter_s_to_the_bit() {
        let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        // Llama 3.1 8B.
        let band = [
            0x3f9a8ed5, 0x3fc6d64a, 0x4001af1d, 0x402c732e, 0x406bcace, 0x40a83c06,
        ];
        assert_eq!(
            bits(llama3_factors(128, 500000.0, 8.0, 8192.0)),
            expected(64, 29, &band, 8.0)
        );
        // Llama 3.2 1B.
        let band = [0x3fd35ec2, 0x4052b46f, 0x411aaaee];
        assert_eq!(
            bits(llama3_factors(64, 500000.0, 32.0, 8192.0)),
            expected(32, 15, &band, 32.0)
        );
        // tests/fixtures/models/llama-gqa-tied.
        assert_eq!(
            bits(llama3_factors(16, 500000.0, 8.0, 64.0)),
            expected(8, 1, &[0x401c4dfb], 8.0)
        );
    }

    #[test]
    fn sampling_settings_are_written_as_the_converter_writes_them() {
        let tmp = tempfile::tempdir().unwrap();
        let write = |config: &str| {
            std::fs::write(tmp.path().join("generation_config.json"), config).unwrap();
            let mut w = Writer::new();
            sampling_metadata(&mut w, tmp.path());
            let path = tmp.path().join("out.gguf");
            w.write_file(&path).unwrap();
            let file = GgufFile::open(&path).unwrap();
            let mut keys: Vec<(String, Value)> = file.metadata().entries().to_vec();
            keys.sort_by(|a, b| a.0.cmp(&b.0));
            keys
        };
        let key = |k: &str, v: Value| (format!("general.sampling.{k}"), v);
        assert_eq!(
            write(
                r#"{"top_k": 40, "temperature": 0.7, "repetition_penalty": 1.1, "top_p": null,
                    "min_p": "0.1", "mirostat": 1.5, "do_sample": true, "bos_token_id": 1}"#
            ),
            [
                key("penalty_repeat", Value::F32(1.1)),
                key("temp", Value::F32(0.7)),
                key("top_k", Value::I32(40)),
            ]
        );
        // `penalty_repeat` stands before `repetition_penalty`, even when null.
        assert_eq!(
            write(r#"{"penalty_repeat": 1.3, "repetition_penalty": 1.1}"#),
            [key("penalty_repeat", Value::F32(1.3))]
        );
        assert_eq!(
            write(r#"{"penalty_repeat": null, "repetition_penalty": 1.1}"#),
            []
        );
        // No file, or not an object: nothing.
        assert_eq!(write("[1, 2]"), []);
        std::fs::remove_file(tmp.path().join("generation_config.json")).unwrap();
        let mut w = Writer::new();
        sampling_metadata(&mut w, tmp.path());
        let path = tmp.path().join("none.gguf");
        w.write_file(&path).unwrap();
        assert!(GgufFile::open(&path)
            .unwrap()
            .metadata()
            .entries()
            .is_empty());
    }
}
