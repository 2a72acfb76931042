//! `--dtype`: the weight matrices widened to `f32` give bit for bit the logits of the
//! checkpoint's own dtype (the kernels widen the same values), and narrowed to `bf16`/`f16`
//! they stay within a stated distance of transformers — in `f32` (the fixtures' logits) and in
//! `bf16` (`logits.bf16.f32`, written by `tools/make_bf16_logits.py`, where transformers also
//! rounds every activation to `bf16`).

mod common;

use common::{fixture, max_abs_diff, FIXTURES};
use sieve_backends::{BackendKind, ModelDir, WeightDtype};

// Measured (transformers 5.23, torch 2.15; `--nocapture` prints them), largest absolute logit
// difference over all positions of the fixtures, whose logits reach |20|:
//
// | fixture (stored) | bf16 vs HF bf16 | bf16 vs HF f32 | f16 vs HF f32 | HF bf16 vs HF f32 |
// |---|---|---|---|---|
// | llama-gqa-tied (f16) | 0.363 | 0.291 | 0.00003 | 0.560 |
// | llama-f32-linear (f32) | 0.438 | 0.196 | 0.025 | 0.500 |
// | qwen2-bias (bf16) | 0.134 | 0.0000 | 0.00001 | 0.134 |
// | mistral-window-sharded (bf16) | 0.158 | 0.0000 | 0.00001 | 0.158 |
// | qwen3-headdim (bf16) | 0.102 | 0.0000 | 0.000 | 0.102 |
// | gemma2-softcap (f32) | 0.411 | 0.198 | 0.035 | 0.328 |
// | gemma3-window (bf16) | 0.599 | 0.0001 | 0.00006 | 0.599 |
//
// sieve computes in f32 whatever the weights, so on a bf16 checkpoint `bf16` is the f32 result
// and its distance to transformers' bf16 run is transformers' own bf16 activation rounding.

/// Largest allowed difference between sieve with `bf16` weights and transformers running the
/// fixture in `bf16` (measured 0.599).
const BF16_VS_TRANSFORMERS_BF16: f32 = 0.75;
/// The same against transformers in `f32`: the rounding of the weights alone (measured 0.291).
const BF16_VS_TRANSFORMERS_F32: f32 = 0.35;
/// `f16` weights against transformers in `f32` (measured 0.035; f16 has 3 more mantissa bits).
const F16_VS_TRANSFORMERS_F32: f32 = 0.05;

fn all_logits(name: &str, dtype: WeightDtype) -> Vec<Vec<f32>> {
    let f = fixture(name);
    let dir = ModelDir::open(&f.dir).unwrap();
    let mut model = dir
        .load_with_progress(BackendKind::Flex, dtype, |_, _| {})
        .unwrap();
    model.forward_all(&f.expected.tokens).unwrap()
}

fn worst(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| max_abs_diff(x, y))
        .fold(0.0, f32::max)
}

fn transformers_bf16(name: &str, rows: usize, vocab: usize) -> Vec<Vec<f32>> {
    let bytes = std::fs::read(fixture(name).dir.join("logits.bf16.f32")).unwrap();
    let values: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(values.len(), rows * vocab, "{name}");
    values.chunks(vocab).map(<[f32]>::to_vec).collect()
}

#[test]
fn f32_weights_give_the_checkpoint_dtype_s_logits_bit_for_bit() {
    for name in FIXTURES {
        let auto = all_logits(name, WeightDtype::Auto);
        let wide = all_logits(name, WeightDtype::F32);
        let same = auto
            .iter()
            .flatten()
            .zip(wide.iter().flatten())
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "{name}: f32 weights changed a logit");
    }
}

#[test]
fn narrowed_weights_stay_within_the_stated_distance_of_transformers() {
    for name in FIXTURES {
        let f = fixture(name);
        let bf16 = all_logits(name, WeightDtype::Bf16);
        let f16 = all_logits(name, WeightDtype::F16);
        let hf_bf16 = transformers_bf16(name, f.logits.len(), f.logits[0].len());
        let (vs_bf16, vs_f32, f16_vs_f32) = (
            worst(&bf16, &hf_bf16),
            worst(&bf16, &f.logits),
            worst(&f16, &f.logits),
        );
        let hf_bf16_vs_f32 = worst(&hf_bf16, &f.logits);
        println!(
            "{name}: bf16 vs transformers bf16 {vs_bf16:.4}, vs f32 {vs_f32:.4}; \
             f16 vs f32 {f16_vs_f32:.5}; transformers bf16 vs f32 {hf_bf16_vs_f32:.4}"
        );
        assert!(vs_bf16 <= BF16_VS_TRANSFORMERS_BF16, "{name}: {vs_bf16}");
        assert!(vs_f32 <= BF16_VS_TRANSFORMERS_F32, "{name}: {vs_f32}");
        assert!(
            f16_vs_f32 <= F16_VS_TRANSFORMERS_F32,
            "{name}: {f16_vs_f32}"
        );
    }
}

#[test]
fn narrow_weights_are_refused_on_a_backend_that_computes_in_f32_tensors() {
    let e = BackendKind::Cuda
        .check_dtype(WeightDtype::Bf16)
        .unwrap_err();
    assert!(
        e.to_string().contains("bf16") && e.to_string().contains("cuda"),
        "{e}"
    );
    assert!(BackendKind::Cuda.check_dtype(WeightDtype::F32).is_ok());
    assert!(BackendKind::Flex.check_dtype(WeightDtype::F16).is_ok());
}
