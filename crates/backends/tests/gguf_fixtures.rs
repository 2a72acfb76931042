//! Fidelity on GGUF files made by llama.cpp itself (`tools/make_gguf_fixtures.py`: its
//! `convert_hf_to_gguf.py` and `llama-quantize` on tiny random models; committed under
//! `tests/fixtures/gguf/` with llama.cpp's logits and transformers' logits of the dequantized
//! weights). Each file loads through `ModelDir::open`, and
//! - with its matrices dequantized to f32 (`--dtype f32`), sieve computes what transformers
//!   computes on the same dequantized weights;
//! - computed in the blocks (`--dtype auto`), it stays within the measured distance of
//!   llama.cpp on the same file (both round the activations to 8-bit blocks, not identically).
//!
//! `cargo test -p sieve-backends --test gguf_fixtures -- --nocapture` prints the table.

mod common;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sieve_backends::{BackendKind, ModelDir, WeightDtype};

#[derive(Deserialize)]
struct Manifest {
    ids: Vec<u32>,
    models: std::collections::BTreeMap<String, Model>,
}

#[derive(Deserialize)]
struct Model {
    files: Vec<File>,
}

#[derive(Deserialize)]
struct File {
    file: String,
    #[serde(rename = "type")]
    ty: String,
    llamacpp_logits: String,
    hf_dequantized_logits: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf")
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    common::max_abs_diff(a, b)
}

fn sieve_logits(path: &Path, dtype: WeightDtype, ids: &[u32]) -> Vec<f32> {
    let dir = ModelDir::open(path).unwrap();
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    model.forward_all(ids).unwrap().concat()
}

/// Sieve on the dequantized weights against transformers on the same weights (measured at
/// most 6.9e-7 over the 14 files; logits reach about |1|).
const DEQUANTIZED_VS_TRANSFORMERS: f32 = 5e-6;
/// Sieve in the blocks against llama.cpp on the same file (measured at most 0.0187, Q4_K).
const BLOCKS_VS_LLAMA_CPP: f32 = 0.025;

#[test]
fn llama_cpp_s_own_files_give_transformers_and_llama_cpp_logits() {
    let text = std::fs::read_to_string(root().join("manifest.json")).unwrap();
    let manifest: Manifest = serde_json::from_str(&text).unwrap();
    let mut checked = 0;
    for (name, model) in &manifest.models {
        let dir = root().join(name);
        for f in &model.files {
            let path = dir.join(&f.file);
            let hf = read_f32(&dir.join(&f.hf_dequantized_logits));
            let llamacpp = read_f32(&dir.join(&f.llamacpp_logits));
            let dequantized = sieve_logits(&path, WeightDtype::F32, &manifest.ids);
            let blocks = sieve_logits(&path, WeightDtype::Auto, &manifest.ids);
            let d_hf = worst(&dequantized, &hf);
            let b_llama = worst(&blocks, &llamacpp);
            let b_hf = worst(&blocks, &hf);
            let llama_hf = worst(&llamacpp, &hf);
            println!(
                "{name} {:7} dequantized vs transformers {d_hf:.2e} | blocks vs llama.cpp {b_llama:.4} | blocks vs transformers {b_hf:.4} | llama.cpp vs transformers {llama_hf:.4}",
                f.ty
            );
            assert!(d_hf <= DEQUANTIZED_VS_TRANSFORMERS, "{}: {d_hf}", f.file);
            assert!(b_llama <= BLOCKS_VS_LLAMA_CPP, "{}: {b_llama}", f.file);
            // sieve's activation rounding is no further from the dequantized model than
            // llama.cpp's is, give or take a third.
            assert!(
                b_hf <= 1.34 * llama_hf + 1e-3,
                "{}: {b_hf} vs llama.cpp's {llama_hf}",
                f.file
            );
            checked += 1;
        }
    }
    assert!(checked >= 14, "{checked} files");
}
