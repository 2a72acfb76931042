//! Quantized weights through the public products: every type (the K-quants too) gives the
//! same bits on every instruction set, thread count and batch, `matmul_nt_many` equals the
//! single products, and the result tracks the float product of the dequantized weights.

use sieve_kernels::quant::{self, QuantType};
use sieve_kernels::{
    matmul_nt, matmul_nt_many, matmul_nt_on, matmul_nt_vec, Error, Format, Isa, WeightView, Weights,
};

/// A deterministic generator in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn weights(ty: QuantType, n: usize, k: usize, seed: u64) -> Weights {
    Weights::quantize_f32(&values(n * k, seed), ty, n, k).unwrap()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn every_isa_thread_count_and_batch_gives_the_same_bits() {
    for ty in QuantType::ALL {
        // Ragged: 9 blocks of 32, or 3 blocks of 256; 37 outputs.
        let k = if ty.is_k() { 768 } else { 288 };
        let (n, m) = (37, 11);
        let w = weights(ty, n, k, 7);
        let x = values(m * k, 3);
        let bias = values(n, 5);
        let mut want = vec![0f32; m * n];
        matmul_nt_on(Isa::Scalar, &x, m, &w.view(), Some(&bias), &mut want);
        for isa in Isa::available() {
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut all = vec![0f32; m * n];
                pool.install(|| matmul_nt_on(isa, &x, m, &w.view(), Some(&bias), &mut all));
                assert_eq!(bits(&all), bits(&want), "{ty} {isa:?} {threads} threads");
                // Row by row (decode) and in odd-sized batches, below and above the rows
                // from which prefill's panel kernels take over: the same bits.
                for (start, len) in [
                    (0, 1),
                    (3, 1),
                    (4, 2),
                    (7, 3),
                    (1, 5),
                    (6, 5),
                    (2, 9),
                    (0, 8),
                ] {
                    let mut part = vec![0f32; len * n];
                    let rows = &x[start * k..(start + len) * k];
                    pool.install(|| {
                        matmul_nt_on(isa, rows, len, &w.view(), Some(&bias), &mut part)
                    });
                    assert_eq!(
                        bits(&part),
                        bits(&want[start * n..(start + len) * n]),
                        "{ty} {isa:?} rows {start}+{len}"
                    );
                }
            }
        }
    }
}

#[test]
fn many_equals_each_product_and_mixes_with_floats() {
    let k = 512;
    let m = 5;
    let x = values(m * k, 11);
    let ws = [
        weights(QuantType::Q4_0, 24, k, 1),
        weights(QuantType::Q8_0, 40, k, 2),
        weights(QuantType::Q4K, 17, k, 3),
        Weights::from_f32(&values(9 * k, 4), 9, k).unwrap(),
        weights(QuantType::Q5_1, 33, k, 5),
    ];
    let views: Vec<WeightView<'_>> = ws.iter().map(Weights::view).collect();
    let mut outs: Vec<Vec<f32>> = views.iter().map(|v| vec![0f32; m * v.n()]).collect();
    {
        let mut jobs: Vec<_> = views
            .iter()
            .zip(outs.iter_mut())
            .map(|(v, o)| (v, None, o.as_mut_slice()))
            .collect();
        matmul_nt_many(&x, m, &mut jobs);
    }
    for (v, got) in views.iter().zip(&outs) {
        let want = matmul_nt_vec(&x, m, v, None);
        assert_eq!(bits(got), bits(&want), "{}", v.format());
    }
}

#[test]
fn tracks_the_float_product_of_the_dequantized_weights() {
    for ty in QuantType::ALL {
        let (n, k, m) = (16, 512, 3);
        let w = weights(ty, n, k, 9);
        let x = values(m * k, 10);
        let mut got = vec![0f32; m * n];
        matmul_nt(&x, m, &w.view(), None, &mut got);
        let view = w.view();
        for r in 0..m {
            for j in 0..n {
                let row = view.row_f32(j);
                let exact: f64 = row
                    .iter()
                    .zip(&x[r * k..(r + 1) * k])
                    .map(|(&a, &b)| f64::from(a) * f64::from(b))
                    .sum();
                let mass: f64 = row
                    .iter()
                    .zip(&x[r * k..(r + 1) * k])
                    .map(|(&a, &b)| (f64::from(a) * f64::from(b)).abs())
                    .sum();
                // Only the activations' 8-bit rounding separates the two.
                let err = (f64::from(got[r * n + j]) - exact).abs();
                assert!(
                    err <= 0.02 * mass,
                    "{ty} [{r}, {j}]: {} vs {exact}",
                    got[r * n + j]
                );
            }
        }
        // `get` agrees with `row_f32`.
        assert_eq!(view.get(3, 100).to_bits(), view.row_f32(3)[100].to_bits());
    }
}

#[test]
fn constructors_check_shapes_and_lengths() {
    let bytes = vec![0u8; 2 * 3 * 18];
    let v = WeightView::quantized(&bytes, QuantType::Q4_0, 2, 96).unwrap();
    assert_eq!(v.format(), Format::Quant(QuantType::Q4_0));
    assert_eq!(v.quant(), Some(QuantType::Q4_0));
    assert_eq!(v.row_bytes(), 54);
    assert!(matches!(
        WeightView::quantized(&bytes, QuantType::Q4_0, 2, 100),
        Err(Error::QuantWidth {
            k: 100,
            block_len: 32,
            ..
        })
    ));
    assert!(matches!(
        WeightView::quantized(&bytes, QuantType::Q4_0, 3, 96),
        Err(Error::QuantLength {
            expected: 162,
            actual: 108,
            ..
        })
    ));
    assert!(matches!(
        WeightView::quantized(&bytes, QuantType::Q8_0, usize::MAX, 32),
        Err(Error::WeightTooLarge { .. })
    ));
    let storage: sieve_kernels::Storage = std::sync::Arc::new(bytes.clone());
    assert!(matches!(
        Weights::quantized(storage.clone(), 10..200, QuantType::Q4_0, 2, 96),
        Err(Error::StorageRange { .. })
    ));
    let w = Weights::quantized(storage, 0..108, QuantType::Q4_0, 2, 96).unwrap();
    assert_eq!(w.quant(), Some(QuantType::Q4_0));
    assert!(matches!(
        Weights::quantize_f32(&[0.0, f32::NAN], QuantType::Q8_0, 1, 2),
        Err(Error::QuantWidth { .. })
    ));
    let mut x = vec![0.5f32; 64];
    x[40] = f32::INFINITY;
    assert!(matches!(
        Weights::quantize_f32(&x, QuantType::Q8_0, 2, 32),
        Err(Error::QuantNotFinite {
            row: 1,
            index: 8,
            ..
        })
    ));
    let mut out = vec![0u8; 34];
    assert!(quant::quantize_row(QuantType::Q8_0, &[1.0; 32], &mut out).is_ok());
    assert!(matches!(
        quant::quantize_row(QuantType::Q8_0, &[1.0; 32], &mut out[..30]),
        Err(Error::QuantLength { .. })
    ));
    assert!("q9_9"
        .parse::<QuantType>()
        .unwrap_err()
        .to_string()
        .contains("q4_k"));
}

#[test]
fn empty_shapes_give_the_float_answers() {
    for ty in [QuantType::Q4_0, QuantType::Q5_1, QuantType::Q6K] {
        // k = 0: every output is its bias (or 0).
        let w = Weights::quantize_f32(&[], ty, 3, 0).unwrap();
        let bias = [1.5f32, -2.0, 0.25];
        let mut out = vec![9f32; 2 * 3];
        matmul_nt(&[], 2, &w.view(), Some(&bias), &mut out);
        assert_eq!(out, [1.5, -2.0, 0.25, 1.5, -2.0, 0.25], "{ty}");
        matmul_nt(&[], 2, &w.view(), None, &mut out);
        assert_eq!(out, [0.0; 6], "{ty}");
        // On every ISA, and at row counts the prefill panels would take.
        for isa in Isa::available() {
            for m in [1usize, 2, 4, 5, 9] {
                let mut out = vec![9f32; m * 3];
                matmul_nt_on(isa, &[], m, &w.view(), Some(&bias), &mut out);
                assert_eq!(out, bias.repeat(m), "{ty} {isa:?} {m} rows");
            }
        }
        // n = 0 and m = 0: nothing to write.
        let w = Weights::quantize_f32(&[], ty, 0, 256).unwrap();
        assert!(matmul_nt_vec(&values(256, 1), 1, &w.view(), None).is_empty());
        let w = weights(ty, 4, 256, 2);
        assert!(matmul_nt_vec(&[], 0, &w.view(), None).is_empty());
    }
}
