//! Writing a Hugging Face checkpoint as a GGUF file the way `convert_hf_to_gguf.py` lays it
//! out: the `{arch}.*` keys [`super::config`] reads back, tensors under GGUF names in GGUF
//! dims, the q/k rows of a `llama` file permuted (`LlamaModel.permute`), vectors in F32 and
//! matrices in F32, F16, BF16 or a quantized type (GGML's reference rounding, by
//! `sieve-kernels`; a matrix whose rows are not whole blocks takes the type
//! [`quant_type_for`] gives, or stays F32, as llama.cpp's quantizer falls back too). It is
//! what the tests compare the GGUF path with, and what `sieve quantize` writes for a Hugging
//! Face directory. The tokenizer is written too ([`write_vocab`]: `tokenizer.ggml.*` from
//! [`sieve_text::vocab_from_hf`], whose tokenizer gives `tokenizer.json`'s ids, and the chat
//! templates as `tokenizer.chat_template`), so the file runs alone in sieve and llama.cpp.
//! The keys are the converter's, with its values where llama.cpp reads them (`keys.rs`: the
//! Llama 3 rope factors in its `f32` arithmetic, `general.sampling.*` from
//! `generation_config.json`, `llama.vocab_size`); the tensors hold llama-quantize's bytes
//! (tested against files llama.cpp made, `tests/gguf_from_hf.rs`). Beyond the converter it
//! writes what llama.cpp would otherwise take a wrong default for (Gemma 3's sliding-window
//! period when it is not 6) and what sieve's reader needs (the original context of Llama 3
//! scaling); a matrix whose rows no block type fits stays F32 where llama-quantize writes
//! F16, so the file computes what `--quantize` computes at load.
//!
//! [`quantize_gguf`] requantizes a GGUF model instead (`sieve quantize`): every metadata key
//! is copied (the tokenizer's included), every matrix is dequantized and quantized again.
//!
//! Only what the reader reads back unchanged is written: a configuration GGUF cannot express
//! (sliding windows outside Gemma, Llama 3 rope scaling, Gemma's own attention scale) is an
//! error naming it, not a different model.

mod keys;

use std::path::Path;

use keys::{gemma_metadata, llama3_factors, sampling_metadata};
use sieve_gguf::{GgmlType, GgufModel, Value, ValueType, Writer};
use sieve_kernels::quant::{self, QuantType};
use sieve_kernels::Dtype as KernelDtype;
use sieve_text::{GgufVocab, ModelIds};

use super::config::Arch;
use super::names::to_gguf;
use super::tensors::unpermute_order;
use super::CHAT_TEMPLATE_KEY;
use crate::dtype::{quant_type_for, quantize_matrix};
use crate::model::RopeScaling;
use crate::{Error, ModelDir, Result};

/// Writes the model of `dir` (a Hugging Face directory of a `llama`, `mistral`, `qwen2`,
/// `qwen3`, `gemma2` or `gemma3_text` family model) to `out` as GGUF, with every matrix in
/// `matrix_type` (F32, F16 or BF16 rounded to nearest, ties to even, or a quantized type the
/// kernels compute; F32 for a matrix whose rows are not whole blocks of it) and every vector
/// in F32, and its tokenizer and chat templates ([`write_vocab`]). Returns the notes of
/// [`sieve_text::HfVocab::notes`]: what the tokenizer metadata does not state exactly (empty
/// for an exact one), for the user to read.
///
/// # Errors
/// [`Error::UnsupportedGguf`] (naming `out`) for a family or option GGUF cannot express, or
/// a matrix type that is not a float type; [`Error::Text`] for a tokenizer GGUF cannot state
/// ([`sieve_text::Error::HfToGguf`]) or a missing `tokenizer.json`; the checkpoint's errors;
/// [`Error::Gguf`] when writing fails.
pub fn write_gguf(dir: &ModelDir, out: &Path, matrix_type: GgmlType) -> Result<Vec<String>> {
    let refuse = |what: &str, message: String| Error::UnsupportedGguf {
        path: out.to_path_buf(),
        what: what.to_string(),
        message,
    };
    let arch = match dir.family().model_type() {
        "llama" | "mistral" => Arch::Llama,
        "qwen2" => Arch::Qwen2,
        "qwen3" => Arch::Qwen3,
        "gemma2" => Arch::Gemma2,
        "gemma3_text" => Arch::Gemma3,
        other => {
            return Err(refuse(
                "family",
                format!(
                "`{other}` is not exported (llama, mistral, qwen2, qwen3, gemma2, gemma3_text are)"
            ),
            ))
        }
    };
    let quant = QuantType::from_ggml_type(matrix_type.id()).filter(|&t| quant::supported(t));
    if quant.is_none() && !matches!(matrix_type, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
        return Err(refuse(
            "type",
            format!(
                "{matrix_type} is neither a float type nor a quantized type the kernels compute"
            ),
        ));
    }
    let config = dir.transformer_config();
    let Some(first) = config.layers.first() else {
        return Err(refuse("layers", "the model has no layer".into()));
    };
    if !arch.sandwich()
        && config
            .layers
            .iter()
            .any(|l| l.attention.sliding_window.is_some())
    {
        return Err(refuse(
            "sliding_window",
            format!(
                "GGUF's `{}` architecture has no sliding window",
                arch.name()
            ),
        ));
    }
    let a = arch.name();
    let att = &first.attention;
    let mut w = Writer::new();
    let u32v = |n: usize| Value::U32(n as u32);
    w.metadata("general.architecture", Value::String(a.into()));
    let file_type = match (matrix_type, quant) {
        (_, Some(t)) => Some(file_type(t)),
        (GgmlType::F32, _) => Some(0),
        (GgmlType::F16, _) => Some(1),
        (GgmlType::BF16, _) => Some(32),
        _ => None,
    };
    if let Some(file_type) = file_type {
        w.metadata("general.file_type", Value::U32(file_type));
    }
    if quant.is_some() {
        w.metadata(
            "general.quantization_version",
            Value::U32(QUANTIZATION_VERSION),
        );
    }
    sampling_metadata(&mut w, dir.path());
    if arch == Arch::Llama {
        // The converter's `LlamaModel` states the embedding's rows (llama.cpp reads them only
        // for a file without a tokenizer).
        w.metadata(format!("{a}.vocab_size"), u32v(dir.vocab_size()));
    }
    w.metadata(format!("{a}.block_count"), u32v(config.layers.len()));
    w.metadata(format!("{a}.context_length"), u32v(config.context_len));
    w.metadata(format!("{a}.embedding_length"), u32v(config.hidden_size()));
    w.metadata(
        format!("{a}.feed_forward_length"),
        u32v(first.mlp.intermediate_size),
    );
    w.metadata(format!("{a}.attention.head_count"), u32v(att.num_heads));
    w.metadata(
        format!("{a}.attention.head_count_kv"),
        u32v(att.num_kv_heads),
    );
    w.metadata(format!("{a}.attention.key_length"), u32v(att.head_dim));
    w.metadata(format!("{a}.attention.value_length"), u32v(att.head_dim));
    w.metadata(
        format!("{a}.rope.dimension_count"),
        u32v(config.rope.head_dim),
    );
    w.metadata(
        format!("{a}.attention.layer_norm_rms_epsilon"),
        Value::F32(config.norm.eps as f32),
    );
    w.metadata(
        format!("{a}.rope.freq_base"),
        Value::F32(config.rope.theta as f32),
    );
    match config.rope.scaling {
        RopeScaling::None => {}
        RopeScaling::Linear { factor } => {
            w.metadata(
                format!("{a}.rope.scaling.type"),
                Value::String("linear".into()),
            );
            w.metadata(
                format!("{a}.rope.scaling.factor"),
                Value::F32(factor as f32),
            );
        }
        RopeScaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_position_embeddings,
        } => {
            if (low_freq_factor, high_freq_factor) != (1.0, 4.0) {
                return Err(refuse(
                    "rope_scaling",
                    "llama3 scaling is read back from GGUF only with low_freq_factor 1 and high_freq_factor 4".into(),
                ));
            }
            w.metadata(
                format!("{a}.rope.scaling.original_context_length"),
                Value::U32(original_max_position_embeddings as u32),
            );
            let factors = llama3_factors(
                config.rope.head_dim,
                config.rope.theta,
                factor,
                original_max_position_embeddings,
            );
            let bytes: Vec<u8> = factors.iter().flat_map(|v| v.to_le_bytes()).collect();
            w.tensor(
                "rope_freqs.weight",
                GgmlType::F32,
                &[factors.len() as u64],
                bytes,
            )?;
        }
    }
    if arch.sandwich() {
        gemma_metadata(&mut w, arch, config).map_err(|m| refuse("gemma", m))?;
    }
    let hf = sieve_text::vocab_from_hf(
        dir.path(),
        &ModelIds {
            vocab_size: dir.vocab_size(),
            bos: dir.bos_id(),
            eos: dir.eos_ids(),
        },
    )?;
    write_vocab(&mut w, &hf.vocab);
    match dir.chat_template() {
        Ok(template) => {
            for (name, source) in template.templates() {
                let key = match name {
                    "default" => CHAT_TEMPLATE_KEY.to_string(),
                    other => format!("{CHAT_TEMPLATE_KEY}.{other}"),
                };
                w.metadata(key, Value::String(source.to_string()));
            }
        }
        Err(crate::Error::Text(sieve_text::Error::NoChatTemplate { .. })) => {}
        Err(e) => return Err(e),
    }
    let checkpoint = dir.checkpoint()?;
    let mut tensors: Vec<(String, Vec<usize>)> = checkpoint
        .shapes()
        .map(|(_, name, shape)| (name.to_string(), shape.to_vec()))
        .collect();
    tensors.sort();
    for (name, shape) in tensors {
        if config.embedding.tied && name == "lm_head.weight" {
            continue;
        }
        let Some(gguf) = to_gguf(&name, arch.sandwich()) else {
            return Err(refuse(
                &format!("tensor `{name}`"),
                "has no GGUF name".into(),
            ));
        };
        let mut values = checkpoint.tensor_f32(&name, &shape)?;
        if arch.norms_hold_unit_offset() && name.ends_with("norm.weight") {
            // Gemma's converter stores `w + 1` (the scale `GemmaRMSNorm` multiplies by).
            values.iter_mut().for_each(|v| *v += 1.0);
        }
        let rows = shape.first().copied().unwrap_or(1);
        if arch.permuted_qk() {
            let heads = if name.contains("self_attn.q_proj.") {
                Some(att.num_heads)
            } else if name.contains("self_attn.k_proj.") {
                Some(att.num_kv_heads)
            } else {
                None
            };
            if let Some(n_head) = heads {
                values = permute_rows(&values, rows, n_head);
            }
        }
        let dims: Vec<u64> = shape.iter().rev().map(|&d| d as u64).collect();
        let row_len = shape.last().copied().unwrap_or(0);
        // The block type of this matrix (a fallback for rows that are not whole blocks).
        let quant = quant.and_then(|t| quant_type_for(t, row_len));
        let ty = match (shape.len(), quant) {
            (1, _) => GgmlType::F32,
            (_, Some(t)) => ggml_type(t),
            (_, None) if matrix_type.is_quantized() => GgmlType::F32,
            _ => matrix_type,
        };
        let bytes: Vec<u8> = match (ty, quant) {
            (GgmlType::F32, _) => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            (GgmlType::F16, _) => values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
            (GgmlType::BF16, _) => values
                .iter()
                .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                .collect(),
            (_, Some(t)) => quantize_matrix(&values, t, values.len() / row_len, row_len)
                .map_err(|e| refuse(&format!("tensor `{name}`"), e.to_string()))?
                .view()
                .bytes()
                .to_vec(),
            (other, None) => return Err(refuse("type", format!("{other} is not written"))),
        };
        w.tensor(gguf, ty, &dims, bytes)?;
    }
    w.write_file(out)?;
    Ok(hf.notes)
}

/// [`write_gguf`] with every matrix in the block type `t` (or its fallback): `sieve quantize`
/// on a Hugging Face directory, what `convert_hf_to_gguf.py` then `llama-quantize --pure`
/// make.
///
/// # Errors
/// As [`write_gguf`].
pub fn quantize_hf(dir: &ModelDir, out: &Path, t: QuantType) -> Result<Vec<String>> {
    write_gguf(dir, out, ggml_type(t))
}

/// Writes `vocab` under its `tokenizer.ggml.*` keys (those [`super::vocab`] reads back; a
/// field that is `None` is left out).
pub fn write_vocab(w: &mut Writer<'_>, vocab: &GgufVocab) {
    let strings = |list: &[String]| {
        Value::Array(
            ValueType::String,
            list.iter().map(|s| Value::String(s.clone())).collect(),
        )
    };
    w.metadata(GgufVocab::KEY_MODEL, Value::String(vocab.model.clone()));
    if let Some(pre) = &vocab.pre {
        w.metadata(GgufVocab::KEY_PRE, Value::String(pre.clone()));
    }
    w.metadata(GgufVocab::KEY_TOKENS, strings(&vocab.tokens));
    if let Some(scores) = &vocab.scores {
        let values = scores.iter().map(|&s| Value::F32(s)).collect();
        w.metadata(GgufVocab::KEY_SCORES, Value::Array(ValueType::F32, values));
    }
    if let Some(types) = &vocab.token_types {
        let values = types.iter().map(|&t| Value::I32(t)).collect();
        w.metadata(
            GgufVocab::KEY_TOKEN_TYPE,
            Value::Array(ValueType::I32, values),
        );
    }
    if let Some(merges) = &vocab.merges {
        w.metadata(GgufVocab::KEY_MERGES, strings(merges));
    }
    for (key, id) in [
        (GgufVocab::KEY_BOS_ID, vocab.bos_id),
        (GgufVocab::KEY_EOS_ID, vocab.eos_id),
        (GgufVocab::KEY_EOT_ID, vocab.eot_id),
        (GgufVocab::KEY_EOM_ID, vocab.eom_id),
        (GgufVocab::KEY_UNK_ID, vocab.unk_id),
        (GgufVocab::KEY_PAD_ID, vocab.pad_id),
    ] {
        if let Some(id) = id {
            w.metadata(key, Value::U32(id));
        }
    }
    for (key, flag) in [
        (GgufVocab::KEY_ADD_BOS, vocab.add_bos),
        (GgufVocab::KEY_ADD_EOS, vocab.add_eos),
        (GgufVocab::KEY_ADD_SPACE_PREFIX, vocab.add_space_prefix),
    ] {
        if let Some(flag) = flag {
            w.metadata(key, Value::Bool(flag));
        }
    }
}

/// The GGUF type of a block type.
fn ggml_type(t: QuantType) -> GgmlType {
    GgmlType::from_id(t.ggml_type()).expect("every block type is a GGML type")
}

/// `general.quantization_version`: the block layouts' version llama.cpp writes
/// (`GGML_QNT_VERSION`).
const QUANTIZATION_VERSION: u32 = 2;

/// `general.file_type` for a file whose matrices are all `t` (llama.cpp's `llama_ftype`), as
/// `llama-quantize --pure` writes it: its type names `Q3_K`, `Q4_K` and `Q5_K` stand for the
/// `_M` mixes (12, 15, 17), so a pure file of those says `_M` too.
pub fn file_type(t: QuantType) -> u32 {
    match t {
        QuantType::Q4_0 => 2,
        QuantType::Q4_1 => 3,
        QuantType::Q8_0 => 7,
        QuantType::Q5_0 => 8,
        QuantType::Q5_1 => 9,
        QuantType::Q2K => 10,
        QuantType::Q3K => 12,
        QuantType::Q4K => 15,
        QuantType::Q5K => 17,
        QuantType::Q6K => 18,
    }
}

/// Writes the GGUF model `model` to `out` with its matrices in `ty` (`sieve quantize`): every
/// metadata key is copied but the split keys (the output is one file), `general.file_type`
/// and `general.quantization_version` are set; each two-dimensional `*.weight` tensor is read
/// as `f32` (dequantized when it is quantized) and quantized into the type
/// [`quant_type_for`] gives for its rows with GGML's reference rounding (rows are quantized
/// independently, so the q/k row order of a `llama` file does not matter); every other
/// tensor, and a matrix no type fits, is copied as it is. Tensors keep their order.
///
/// # Errors
/// [`Error::UnsupportedGguf`] (naming the tensor) for a matrix of a type the kernels do not
/// read, or a value that is not finite; [`Error::Gguf`] when writing fails.
pub fn quantize_gguf(model: &GgufModel, out: &Path, ty: QuantType) -> Result<()> {
    let mut w = Writer::new();
    for (key, value) in model.metadata().entries() {
        if !key.starts_with("split.") {
            w.metadata(key.clone(), value.clone());
        }
    }
    w.metadata("general.file_type", Value::U32(file_type(ty)));
    w.metadata(
        "general.quantization_version",
        Value::U32(QUANTIZATION_VERSION),
    );
    for (shard, info) in model.tensors() {
        let bytes = shard.tensor_bytes(info);
        let target = match info.dims.as_slice() {
            [k, _] if info.name.ends_with(".weight") => {
                usize::try_from(*k).ok().and_then(|k| quant_type_for(ty, k))
            }
            _ => None,
        };
        let Some(target) = target else {
            w.tensor(info.name.clone(), info.ggml_type, &info.dims, bytes)?;
            continue;
        };
        let refuse = |message: String| Error::UnsupportedGguf {
            path: shard.path().to_path_buf(),
            what: format!("tensor `{}`", info.name),
            message,
        };
        let (k, n) = (info.dims[0] as usize, info.dims[1] as usize);
        let values = dequantize(bytes, info.ggml_type, n, k).ok_or_else(|| {
            refuse(format!(
                "type {} is not read (F32, F16, BF16 and the computed block types are)",
                info.ggml_type
            ))
        })?;
        let quantized = quantize_matrix(&values, target, n, k)
            .map_err(|e| refuse(format!("quantizing to {target}: {e}")))?;
        w.tensor(
            info.name.clone(),
            ggml_type(target),
            &info.dims,
            quantized.view().bytes().to_vec(),
        )?;
    }
    w.write_file(out)?;
    Ok(())
}

/// The `n` rows of `k` elements of `bytes` (a tensor of type `ty`, checked by the reader) as
/// `f32`, or `None` for a type the kernels do not read.
fn dequantize(bytes: &[u8], ty: GgmlType, n: usize, k: usize) -> Option<Vec<f32>> {
    let float = match ty {
        GgmlType::F32 => Some(KernelDtype::F32),
        GgmlType::F16 => Some(KernelDtype::F16),
        GgmlType::BF16 => Some(KernelDtype::Bf16),
        _ => None,
    };
    if let Some(d) = float {
        return Some((0..n * k).map(|i| d.get(bytes, i)).collect());
    }
    let t = QuantType::from_ggml_type(ty.id()).filter(|&t| quant::supported(t))?;
    let row_bytes = t.row_bytes(k).filter(|&r| r > 0)?;
    let mut out = vec![0f32; n * k];
    for (b, o) in bytes.chunks_exact(row_bytes).zip(out.chunks_exact_mut(k)) {
        quant::dequantize_row(t, b, o);
    }
    Some(out)
}

/// `LlamaModel.permute` applied to the rows of a row-major matrix (or vector) of `rows` rows
/// in `n_head` heads: stored row `h·d + 2i + j` is Hugging Face row `h·d + j·d/2 + i`.
fn permute_rows(values: &[f32], rows: usize, n_head: usize) -> Vec<f32> {
    let width = values.len() / rows.max(1);
    let order = unpermute_order(rows, n_head);
    let mut out = vec![0f32; values.len()];
    for (hf_row, &stored) in order.iter().enumerate() {
        out[stored * width..(stored + 1) * width]
            .copy_from_slice(&values[hf_row * width..(hf_row + 1) * width]);
    }
    out
}
