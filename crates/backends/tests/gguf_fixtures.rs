//! Fidelity on GGUF files made by llama.cpp itself (`tools/make_gguf_fixtures.py`: its
//! `convert_hf_to_gguf.py` and `llama-quantize` on tiny random models; committed under
//! `tests/fixtures/gguf/` with llama.cpp's logits and transformers' logits of the dequantized
//! weights). Each file loads through `ModelDir::open`, and
//! - with its matrices dequantized to f32 (`--dtype f32`), sieve computes what transformers
//!   computes on the same dequantized weights;
//! - computed in the blocks (`--dtype auto`), it computes what llama.cpp computes on the same
//!   file, within the per-type bounds below.
//!
//! llama.cpp's logits are taken with an f32 KV cache and flash attention off (on the CPU,
//! ggml's flash attention rounds Q, K and V to f16 and accumulates in f16 even with an f32
//! cache: with it on, the engines differed by 0.012 to 0.019 on every quantized file). Then both
//! engines quantize each activation row to the same 8-bit blocks (Q8_0 / Q8_1 for the legacy
//! types, Q8_K for the K-quants: the same scales, the same rounding, the same integer dot
//! products), and the logits agree to a few f32 rounding steps (at most 3.6e-7; logits reach
//! about |1|): the float parts of a row's sum are added in another order.
//!
//! Three files have one activation value that lies within a few f32 ulps of a rounding
//! boundary of that quantization, and there the engines land on either side: one block of
//! one activation row is quantized differently, which moves the logits of the positions that
//! read it by up to 0.019 (a quant one step off, `d_a · w`, or a block scale one f16 step off,
//! `2^-11` of the block's contribution). Found with a callback on llama.cpp's graph
//! (`cb_eval`) that scans every quantized product's input for the values nearest a boundary
//! and moves one of them across it; llama.cpp then gives sieve's logits to at most 3e-7:
//! - `llama-Q3_K` (positions 3–11): `attn_norm` at position 3, element 80, times the block's
//!   `iscale` is -102.5 in f32, a tie (sieve: ties to even, -102), but -102.5000026 exactly.
//!   The default llama.cpp build (GCC, `-march=x86-64-v3`, GCC's default
//!   `-ffp-contract=fast`) compiles `nearest_int(iscale * x)` in `quantize_row_q8_K_ref` to
//!   one fused multiply-add with the rounding constant, so it rounds the exact product: -103.
//!   The value feeds K and V, hence every later position. llama.cpp's clang build
//!   (`build.sh native`, no contraction across the inlined call) gives sieve's logits here to
//!   1.8e-7.
//! - `llama-Q5_K` (position 6): `ffn_swiglu` at position 6, element 154, is 6 ulps from the
//!   boundary -12.5 of its Q8_K block (llama.cpp: -12.5000057, quant -13; moved 5 ulps toward
//!   zero, llama.cpp gives sieve's logits). llama.cpp's value is the correctly rounded
//!   `silu(gate) · up` of its own gate and up, which come from Q5_K products whose float parts
//!   are assembled differently (ggml: 8 lane partial sums, each `fma(d, sumi)`, plus the mins
//!   term apart; sieve: `(a_d · d) · isum − (a_d · dmin) · msum` per super-block), so the two
//!   engines' inputs to the quantization are a few ulps apart.
//! - `llama-Q4_1` (position 2): the Q8_1 block of `ffn_norm` at position 2, elements 224–255:
//!   its scale `amax / 127` is 1 f32 ulp from a tie between two f16 values, and the two RMS
//!   norms give its largest element (252) an ulp apart (llama.cpp's moved 1 ulp away from
//!   zero gives sieve's logits), so the f16 scale `d_a` comes out one f16 step apart. Q4_1's
//!   offset term (`m_w · s_a`, `s_a = f16(d_a · Σ q)` as ggml's `block_q8_1` stores it) is
//!   computed the same way by both.
//!
//! F16 and BF16 files differ more everywhere: llama.cpp rounds the activations to f16 / bf16
//! for those products, sieve keeps them in f32 (so it computes what transformers computes).
//!
//! `cargo test -p sieve-backends --test gguf_fixtures -- --nocapture` prints the table.

mod common;

use std::path::{Path, PathBuf};

use common::{fixture, fixture_dir};
use serde::Deserialize;
use sieve_backends::gguf::export::quantize_hf;
use sieve_backends::{BackendKind, ModelDir, WeightDtype};
use sieve_kernels::quant::QuantType;

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

/// Sieve in the blocks against llama.cpp at a position where both quantize every activation
/// block alike: 2 × the largest measured, 3.58e-7 (`llama-Q6_K`; 1.2e-7 to 3.6e-7 over the 12
/// quantized files).
const SAME_BLOCKS: f32 = 7.2e-7;

/// Files where one activation block is quantized differently (module docs): the positions
/// whose logits it moves, and the bound there, 2 × the measured max |diff|.
const ONE_BLOCK_APART: [(&str, &[usize], f32); 3] = [
    // Measured 3.96e-3 at position 2.
    ("llama-Q4_1.gguf", &[2], 7.9e-3),
    // Measured 4.89e-3 at position 6.
    ("llama-Q5_K.gguf", &[6], 9.8e-3),
    // Measured 1.2e-2 to 1.90e-2 at positions 3 to 11.
    ("llama-Q3_K.gguf", &[3, 4, 5, 6, 7, 8, 9, 10, 11], 3.8e-2),
];

/// F16 / BF16 files, every position: llama.cpp rounds the activations to f16 / bf16
/// (measured 5.00e-4 on `llama-F16`, 3.64e-3 on `qwen2-BF16`), 2 × those.
const F16_ACTIVATIONS: f32 = 1.0e-3;
/// See [`F16_ACTIVATIONS`].
const BF16_ACTIVATIONS: f32 = 7.3e-3;

/// The bound on |sieve − llama.cpp| at `position` of `file` of type `ty`.
fn bound(file: &str, ty: &str, position: usize) -> f32 {
    match ty {
        "F16" => return F16_ACTIVATIONS,
        "BF16" => return BF16_ACTIVATIONS,
        _ => {}
    }
    for (name, positions, bound) in ONE_BLOCK_APART {
        if name == file && positions.contains(&position) {
            return bound;
        }
    }
    SAME_BLOCKS
}

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
            let n_vocab = llamacpp.len() / manifest.ids.len();
            let rows = blocks.chunks(n_vocab).zip(llamacpp.chunks(n_vocab));
            let per_position: Vec<f32> = rows.map(|(a, b)| worst(a, b)).collect();
            let b_hf = worst(&blocks, &hf);
            let llama_hf = worst(&llamacpp, &hf);
            println!(
                "{name} {:7} dequantized vs transformers {d_hf:.2e} | blocks vs llama.cpp {b_llama:.2e} | blocks vs transformers {b_hf:.4} | llama.cpp vs transformers {llama_hf:.4}",
                f.ty
            );
            assert!(d_hf <= DEQUANTIZED_VS_TRANSFORMERS, "{}: {d_hf}", f.file);
            for (position, &d) in per_position.iter().enumerate() {
                let most = bound(&f.file, &f.ty, position);
                assert!(
                    d <= most,
                    "{} position {position}: |sieve - llama.cpp| {d:e} > {most:e} (per position: {per_position:?})",
                    f.file
                );
            }
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

/// llama.cpp's own Q8_0 files of fixtures (`tests/fixtures/gguf/models/`:
/// `convert_hf_to_gguf.py`, then `llama-quantize --pure`) load with the safetensors
/// directory's rope configuration and give the logits of sieve's own Q8_0 file of that
/// directory (`quantize_hf`: the same tensor bytes, `gguf_from_hf.rs`) bit for bit.
/// `llama-gqa-tied` has Llama 3 rope scaling with an original context of 64: the converter
/// writes only the factors (`rope_freqs.weight`), and the context comes back from them (the
/// reader assumed 8192 and refused the file before). The other two files of that folder hold
/// other values: `llama-f32-linear`'s `ffn_down` rows (48) fit no block, F16 in llama.cpp's
/// file and F32 in sieve's; `gemma3-window`'s period of sliding layers (3) is left out by the
/// converter, so llama.cpp (and sieve, reading that file) takes its default of 6.
#[test]
fn llama_cpp_s_converted_files_give_sieve_s_own_file_s_logits() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["llama-gqa-tied", "qwen2-bias"] {
        let theirs = root().join("models").join(format!("{name}-Q8_0.gguf"));
        let hf = ModelDir::open(fixture_dir(name)).unwrap();
        let ours = tmp.path().join(format!("{name}.gguf"));
        quantize_hf(&hf, &ours, QuantType::Q8_0).unwrap();
        let gguf = ModelDir::open(&theirs).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            gguf.transformer_config().rope,
            hf.transformer_config().rope,
            "{name}"
        );
        let tokens = fixture(name).expected.tokens;
        let a = sieve_logits(&theirs, WeightDtype::Auto, &tokens);
        let b = sieve_logits(&ours, WeightDtype::Auto, &tokens);
        assert_eq!(a.len(), b.len());
        let same = a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{name}: {}", worst(&a, &b));
    }
}
