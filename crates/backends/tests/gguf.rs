//! GGUF files as models: a fixture written as GGUF the way llama.cpp's converter lays it out
//! (q/k rows permuted for `llama`) gives the safetensors directory's logits bit for bit,
//! through `ModelDir::open(file).load(…)`, in F32, F16 and BF16; and a bad or unsupported file
//! is an error naming what is wrong.

mod common;

use std::path::{Path, PathBuf};

use common::fixture;
use sieve_backends::gguf::export::write_gguf;
use sieve_backends::{BackendKind, Error, ModelDir, WeightDtype};
use sieve_gguf::{GgmlType, GgufFile, Value, Writer};

/// The fixture `name` written as GGUF with matrices in `ty`, in a temporary directory.
fn exported(name: &str, ty: GgmlType) -> (tempfile::TempDir, PathBuf) {
    let dir = ModelDir::open(fixture(name).dir).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join(format!("{name}.gguf"));
    write_gguf(&dir, &out, ty).unwrap();
    (tmp, out)
}

fn logits(path: &Path, dtype: WeightDtype, tokens: &[u32]) -> Vec<Vec<f32>> {
    let dir = ModelDir::open(path).unwrap();
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    model.forward_all(tokens).unwrap()
}

/// The GGUF of `name` with matrices in `ty` gives the safetensors logits (its matrices in
/// `dtype`) bit for bit.
fn same_bits(name: &str, ty: GgmlType, dtype: WeightDtype) {
    let f = fixture(name);
    let (_tmp, file) = exported(name, ty);
    let from_gguf = logits(&file, WeightDtype::Auto, &f.expected.tokens);
    let from_safetensors = logits(&f.dir, dtype, &f.expected.tokens);
    assert_eq!(from_gguf.len(), f.expected.tokens.len());
    for (row, (g, s)) in from_gguf.iter().zip(&from_safetensors).enumerate() {
        let same = g.iter().zip(s).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name} {ty}: row {row} differs");
    }
}

#[test]
fn llama_with_biases_and_linear_rope_in_f32_gives_the_same_bits() {
    same_bits("llama-f32-linear", GgmlType::F32, WeightDtype::Auto);
}

#[test]
fn llama_in_f16_gives_the_bits_of_f16_weights() {
    same_bits("llama-f32-linear", GgmlType::F16, WeightDtype::F16);
}

#[test]
fn qwen2_in_bf16_gives_the_same_bits() {
    same_bits("qwen2-bias", GgmlType::BF16, WeightDtype::Auto);
}

#[test]
fn the_llama_q_rows_are_stored_permuted() {
    // Without the loader undoing it, the GGUF's q matrix is not the checkpoint's.
    let (_tmp, file) = exported("llama-f32-linear", GgmlType::F32);
    let gguf = GgufFile::open(&file).unwrap();
    let q = gguf.tensor("blk.0.attn_q.weight").unwrap();
    let stored = gguf.tensor_bytes(q).to_vec();
    let dir = ModelDir::open(fixture("llama-f32-linear").dir).unwrap();
    let hf = dir
        .checkpoint()
        .unwrap()
        .tensor_f32("model.layers.0.self_attn.q_proj.weight", &[32, 32])
        .unwrap();
    let hf: Vec<u8> = hf.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_ne!(stored, hf);
    let through_loader = ModelDir::open(&file)
        .unwrap()
        .checkpoint()
        .unwrap()
        .tensor_f32("model.layers.0.self_attn.q_proj.weight", &[32, 32])
        .unwrap();
    let through_loader: Vec<u8> = through_loader
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(through_loader, hf);
}

#[test]
fn a_directory_with_one_gguf_and_no_config_opens_it() {
    let (tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let dir = ModelDir::open(tmp.path()).unwrap();
    assert_eq!(dir.path(), file);
    assert_eq!(dir.family().model_type(), "qwen2");
    assert_eq!(
        dir.generation(),
        &sieve_backends::GenerationConfig::default()
    );
    std::fs::copy(&file, tmp.path().join("other.gguf")).unwrap();
    let e = ModelDir::open(tmp.path()).unwrap_err().to_string();
    assert!(
        e.contains("2 GGUF models") && e.contains("other.gguf"),
        "{e}"
    );
}

/// A file with `edit` applied to the exported llama's metadata.
fn edited(edit: impl FnOnce(&mut Vec<(String, Value)>)) -> Result<ModelDir, Error> {
    let (tmp, file) = exported("llama-f32-linear", GgmlType::F32);
    let gguf = GgufFile::open(&file).unwrap();
    let mut meta = gguf.metadata().entries().to_vec();
    edit(&mut meta);
    let mut w = Writer::new();
    for (k, v) in meta {
        w.metadata(k, v);
    }
    for t in gguf.tensors() {
        w.tensor(t.name.clone(), t.ggml_type, &t.dims, gguf.tensor_bytes(t))
            .unwrap();
    }
    let out = tmp.path().join("edited.gguf");
    w.write_file(&out).unwrap();
    let result = ModelDir::open(&out);
    drop(tmp);
    result
}

fn set(meta: &mut Vec<(String, Value)>, key: &str, value: Value) {
    meta.retain(|(k, _)| k != key);
    meta.push((key.to_string(), value));
}

#[test]
fn unsupported_metadata_is_named() {
    let e = edited(|m| set(m, "general.architecture", Value::String("gpt2".into())))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`gpt2` is not supported") && e.contains("qwen3"),
        "{e}"
    );
    let e = edited(|m| set(m, "llama.rope.scaling.type", Value::String("yarn".into())))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("llama.rope.scaling.type") && e.contains("yarn"),
        "{e}"
    );
    let e = edited(|m| set(m, "llama.rope.dimension_count", Value::U32(8)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("partial rotary"), "{e}");
    let e = edited(|m| m.retain(|(k, _)| k != "llama.block_count"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("llama.block_count") && e.contains("absent"),
        "{e}"
    );
    let e = edited(|m| set(m, "llama.block_count", Value::U32(u32::MAX)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("llama.block_count"), "{e}");
    let e = edited(|m| set(m, "llama.embedding_length", Value::String("x".into()))).unwrap_err();
    assert!(e.is_bad_model_file(), "{e}");
    assert!(e.to_string().contains("llama.embedding_length"), "{e}");
}

#[test]
fn a_truncated_gguf_is_a_bad_model_file() {
    let (tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let bytes = std::fs::read(&file).unwrap();
    let cut = tmp.path().join("cut.gguf");
    for len in [0, 3, 20, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let e = ModelDir::open(&cut).unwrap_err();
        assert!(e.is_bad_model_file(), "{len}: {e}");
        assert!(e.to_string().contains("cut.gguf"), "{len}: {e}");
    }
}

#[test]
fn a_gguf_without_tokenizer_metadata_says_so() {
    let (_tmp, file) = exported("qwen2-bias", GgmlType::BF16);
    let dir = ModelDir::open(&file).unwrap();
    let e = dir.tokenizer().unwrap_err().to_string();
    assert!(e.contains("tokenizer.ggml.model"), "{e}");
    let e = dir.chat_template().unwrap_err().to_string();
    assert!(e.contains("tokenizer.chat_template"), "{e}");
}
