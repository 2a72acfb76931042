//! `matmul_nt` against `reference_dot`: every instruction set, every dtype, any batch, any
//! position in the batch, any thread count, unaligned bytes.

use proptest::prelude::*;
use sieve_kernels::{
    matmul_nt, matmul_nt_many, matmul_nt_on, matmul_nt_vec, reference_dot, Dtype, Error, Isa,
    WeightView,
};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    /// A value with a random sign, mantissa and exponent in 2^-20..2^20.
    fn wide(&mut self) -> f32 {
        let e = (self.next() % 41) as i32 - 20;
        self.unit() * 2f32.powi(e)
    }
    fn vec(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.wide()).collect()
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `v` rounded to `dtype` (as its little-endian bytes) and the exact widening back to `f32`.
fn narrow(v: &[f32], dtype: Dtype) -> (Vec<u8>, Vec<f32>) {
    match dtype {
        Dtype::F32 => (f32_bytes(v), v.to_vec()),
        Dtype::Bf16 => {
            let h: Vec<half::bf16> = v.iter().map(|&x| half::bf16::from_f32(x)).collect();
            (
                h.iter().flat_map(|x| x.to_le_bytes()).collect(),
                h.iter().map(|x| x.to_f32()).collect(),
            )
        }
        Dtype::F16 => {
            let h: Vec<half::f16> = v.iter().map(|&x| half::f16::from_f32(x)).collect();
            (
                h.iter().flat_map(|x| x.to_le_bytes()).collect(),
                h.iter().map(|x| x.to_f32()).collect(),
            )
        }
    }
}

/// Every output by `reference_dot` (plus bias).
fn reference(x: &[f32], m: usize, w: &[f32], n: usize, bias: Option<&[f32]>) -> Vec<f32> {
    let k = x.len().checked_div(m).unwrap_or(0);
    let mut out = Vec::with_capacity(m * n);
    for r in 0..m {
        for j in 0..n {
            let d = reference_dot(&x[r * k..][..k], &w[j * k..][..k]);
            out.push(bias.map_or(d, |b| d + b[j]));
        }
    }
    out
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

const DTYPES: [Dtype; 3] = [Dtype::F32, Dtype::Bf16, Dtype::F16];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every instruction set computes `reference_dot` bit for bit, for any length (tails
    /// included) and values spanning 40 binary orders of magnitude.
    #[test]
    fn every_isa_is_the_reference_dot(k in 0usize..300, n in 1usize..20, seed in any::<u64>(), bias in any::<bool>()) {
        let mut rng = Rng(seed | 1);
        let x = rng.vec(k);
        let w = rng.vec(n * k);
        let b = rng.vec(n);
        let b = bias.then_some(&b[..]);
        let want = bits(&reference(&x, 1, &w, n, b));
        let bytes = f32_bytes(&w);
        let view = WeightView::new(&bytes, Dtype::F32, n, k).unwrap();
        for isa in Isa::available() {
            let mut out = vec![0f32; n];
            matmul_nt_on(isa, &x, 1, &view, b, &mut out);
            prop_assert_eq!(bits(&out), want.clone(), "{:?}", isa);
        }
    }

    /// Narrow dtypes give the bits of the `f32` weight holding their widened values.
    #[test]
    fn narrow_dtypes_equal_their_widened_f32(k in 1usize..200, n in 1usize..12, m in 1usize..20, seed in any::<u64>()) {
        let mut rng = Rng(seed | 1);
        let x = rng.vec(m * k);
        let w: Vec<f32> = (0..n * k).map(|_| rng.unit()).collect();
        for dtype in [Dtype::Bf16, Dtype::F16] {
            let (bytes, widened) = narrow(&w, dtype);
            let want = bits(&reference(&x, m, &widened, n, None));
            let view = WeightView::new(&bytes, dtype, n, k).unwrap();
            for isa in Isa::available() {
                let mut out = vec![0f32; m * n];
                matmul_nt_on(isa, &x, m, &view, None, &mut out);
                prop_assert_eq!(bits(&out), want.clone(), "{:?} {:?}", isa, dtype);
            }
        }
    }
}

/// A row's result is the same alone and at any position of any batch, for every dtype and
/// instruction set (decode tiles, prefill tiles, packed panels, several panels, several tasks).
#[test]
fn a_row_does_not_depend_on_its_batch() {
    let mut rng = Rng(7);
    let (n, k) = (300, 1000); // several prefill panels and several tasks
    let w = rng.vec(n * k);
    let bias = rng.vec(n);
    let rows = rng.vec(100 * k);
    for dtype in DTYPES {
        let (bytes, _) = narrow(&w, dtype);
        let view = WeightView::new(&bytes, dtype, n, k).unwrap();
        for isa in Isa::available() {
            let alone: Vec<Vec<f32>> = (0..100)
                .map(|r| {
                    let mut out = vec![0f32; n];
                    matmul_nt_on(isa, &rows[r * k..][..k], 1, &view, Some(&bias), &mut out);
                    out
                })
                .collect();
            for m in (1..=9).chain([17, 64, 100]) {
                // Take the batch from a shifted window of rows, so every row lands at several
                // positions across the batch sizes.
                let start = (m * 13) % (100 - m + 1);
                let x = &rows[start * k..][..m * k];
                let mut out = vec![0f32; m * n];
                matmul_nt_on(isa, x, m, &view, Some(&bias), &mut out);
                for r in 0..m {
                    assert_eq!(
                        bits(&out[r * n..][..n]),
                        bits(&alone[start + r]),
                        "{isa:?} {dtype} m={m} r={r}"
                    );
                }
            }
        }
    }
}

/// Long rows in a large batch (several weight panels, several row blocks, several tasks) equal
/// the same rows computed one at a time.
#[test]
fn large_batches_equal_single_rows() {
    let mut rng = Rng(13);
    let (m, n, k) = (130, 150, 2100);
    let x = rng.vec(m * k);
    let w = rng.vec(n * k);
    for dtype in [Dtype::Bf16, Dtype::F32] {
        let (bytes, _) = narrow(&w, dtype);
        let view = WeightView::new(&bytes, dtype, n, k).unwrap();
        for isa in Isa::available() {
            let mut batch = vec![0f32; m * n];
            matmul_nt_on(isa, &x, m, &view, None, &mut batch);
            for r in 0..m {
                let mut one = vec![0f32; n];
                matmul_nt_on(isa, &x[r * k..][..k], 1, &view, None, &mut one);
                assert_eq!(
                    bits(&batch[r * n..][..n]),
                    bits(&one),
                    "{isa:?} {dtype} row {r}"
                );
            }
        }
    }
}

/// Every column count (every remainder of the register tiles' column groups and of the
/// threads' 16-column ranges) and row count (decode and prefill tiles, every row remainder)
/// gives `reference_dot` on every instruction set, on one thread and on three.
#[test]
fn every_column_and_row_count_is_the_reference() {
    let mut rng = Rng(17);
    let k = 70;
    let x = rng.vec(13 * k);
    let w = rng.vec(50 * k);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for dtype in [Dtype::Bf16, Dtype::F32] {
        let (bytes, widened) = narrow(&w, dtype);
        for n in 1..=50 {
            let view = WeightView::new(&bytes[..n * k * dtype.size()], dtype, n, k).unwrap();
            for m in [1, 2, 3, 5, 8, 9, 10, 11, 12, 13] {
                let want = bits(&reference(&x[..m * k], m, &widened[..n * k], n, None));
                for isa in Isa::available() {
                    let mut out = vec![0f32; m * n];
                    matmul_nt_on(isa, &x[..m * k], m, &view, None, &mut out);
                    assert_eq!(bits(&out), want, "{isa:?} {dtype} m={m} n={n}");
                    out.fill(0.0);
                    pool.install(|| matmul_nt_on(isa, &x[..m * k], m, &view, None, &mut out));
                    assert_eq!(bits(&out), want, "{isa:?} {dtype} m={m} n={n} 3 threads");
                }
            }
        }
    }
}

/// Every instruction set gives the same bits on a whole batch.
#[test]
fn instruction_sets_agree_on_a_batch() {
    let mut rng = Rng(11);
    let (m, n, k) = (37, 75, 333);
    let x = rng.vec(m * k);
    let w = rng.vec(n * k);
    for dtype in DTYPES {
        let (bytes, widened) = narrow(&w, dtype);
        let view = WeightView::new(&bytes, dtype, n, k).unwrap();
        let want = bits(&reference(&x, m, &widened, n, None));
        for isa in Isa::available() {
            let mut out = vec![0f32; m * n];
            matmul_nt_on(isa, &x, m, &view, None, &mut out);
            assert_eq!(bits(&out), want, "{isa:?} {dtype}");
        }
    }
}

/// One, two or three threads give the same bits.
#[test]
fn thread_count_does_not_matter() {
    let mut rng = Rng(3);
    let (n, k) = (2000, 576);
    let w = rng.vec(n * k);
    for dtype in DTYPES {
        let (bytes, _) = narrow(&w, dtype);
        let view = WeightView::new(&bytes, dtype, n, k).unwrap();
        for m in [1, 4, 8, 33] {
            let x = rng.vec(m * k);
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut out = vec![0f32; m * n];
                pool.install(|| matmul_nt(&x, m, &view, None, &mut out));
                bits(&out)
            };
            let one = run(1);
            assert_eq!(run(2), one, "{dtype} m={m}");
            assert_eq!(run(3), one, "{dtype} m={m}");
        }
    }
}

/// Weights at odd byte offsets (as in a memory-mapped file) give the same bits.
#[test]
fn unaligned_bytes_work() {
    let mut rng = Rng(5);
    let (m, n, k) = (10, 19, 45);
    let x = rng.vec(m * k);
    let w = rng.vec(n * k);
    for dtype in DTYPES {
        let (bytes, widened) = narrow(&w, dtype);
        let want = bits(&reference(&x, m, &widened, n, None));
        for offset in 0..4 {
            let mut buf = vec![0u8; offset];
            buf.extend_from_slice(&bytes);
            let view = WeightView::new(&buf[offset..], dtype, n, k).unwrap();
            for isa in Isa::available() {
                for rows in [1, m] {
                    let mut out = vec![0f32; rows * n];
                    matmul_nt_on(isa, &x[..rows * k], rows, &view, None, &mut out);
                    assert_eq!(
                        bits(&out),
                        want[..rows * n],
                        "{isa:?} {dtype} offset {offset} m={rows}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_wrong_byte_length_is_an_error() {
    let bytes = vec![0u8; 4 * 6];
    assert!(WeightView::new(&bytes, Dtype::F32, 2, 3).is_ok());
    assert!(WeightView::new(&bytes, Dtype::Bf16, 4, 3).is_ok());
    for (dtype, n, k) in [
        (Dtype::F32, 2, 4),
        (Dtype::F32, 1, 3),
        (Dtype::Bf16, 2, 3),
        (Dtype::F16, 5, 3),
    ] {
        let err = WeightView::new(&bytes, dtype, n, k).unwrap_err();
        assert!(
            matches!(err, Error::WeightLength { actual: 24, .. }),
            "{err}"
        );
    }
    assert!(matches!(
        WeightView::new(&bytes, Dtype::F32, usize::MAX, 2),
        Err(Error::WeightTooLarge { .. })
    ));
}

/// Sanity: close to a plain f64 product.
#[test]
fn close_to_a_naive_f64_product() {
    let mut rng = Rng(9);
    let (m, n, k) = (23, 41, 777);
    let x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
    let w: Vec<f32> = (0..n * k).map(|_| rng.unit()).collect();
    let bytes = f32_bytes(&w);
    let view = WeightView::new(&bytes, Dtype::F32, n, k).unwrap();
    let mut out = vec![0f32; m * n];
    matmul_nt(&x, m, &view, None, &mut out);
    for r in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|i| f64::from(x[r * k + i]) * f64::from(w[j * k + i]))
                .sum();
            let got = f64::from(out[r * n + j]);
            assert!(
                (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "[{r},{j}]: {got} vs {want}"
            );
        }
    }
}

/// `matmul_nt_vec` (no zeroed output) gives `matmul_nt`'s bits, calls of shrinking and
/// growing sizes in a row included (the copied rows' buffer is reused).
#[test]
fn the_vec_form_equals_the_slice_form() {
    let mut rng = Rng(19);
    let (n, k) = (37, 101);
    let w = rng.vec(n * k);
    let bias = rng.vec(n);
    let bytes = f32_bytes(&w);
    let view = WeightView::new(&bytes, Dtype::F32, n, k).unwrap();
    for m in [40, 9, 1, 0, 64, 12] {
        let x = rng.vec(m * k);
        let mut want = vec![0f32; m * n];
        matmul_nt(&x, m, &view, Some(&bias), &mut want);
        assert_eq!(
            bits(&matmul_nt_vec(&x, m, &view, Some(&bias))),
            bits(&want),
            "m={m}"
        );
    }
}

/// Several weights at once (different widths, dtypes and biases) give each one's own bits,
/// on one thread and on three.
#[test]
fn several_weights_at_once_equal_each_alone() {
    let mut rng = Rng(23);
    let k = 83;
    let shapes = [
        (Dtype::Bf16, 45, true),
        (Dtype::F32, 7, false),
        (Dtype::F16, 300, true),
    ];
    let bytes: Vec<Vec<u8>> = shapes
        .iter()
        .map(|&(dtype, n, _)| narrow(&rng.vec(n * k), dtype).0)
        .collect();
    let biases: Vec<Vec<f32>> = shapes.iter().map(|&(_, n, _)| rng.vec(n)).collect();
    let views: Vec<WeightView<'_>> = shapes
        .iter()
        .zip(&bytes)
        .map(|(&(dtype, n, _), b)| WeightView::new(b, dtype, n, k).unwrap())
        .collect();
    let layers: Vec<(&WeightView<'_>, Option<&[f32]>)> = views
        .iter()
        .zip(shapes.iter().zip(&biases))
        .map(|(v, (&(.., with), b))| (v, with.then_some(&b[..])))
        .collect();
    for m in [1, 5, 9, 64] {
        let x = rng.vec(m * k);
        let want: Vec<Vec<u32>> = layers
            .iter()
            .map(|&(w, b)| bits(&matmul_nt_vec(&x, m, w, b)))
            .collect();
        for threads in [1, 3] {
            let mut outs: Vec<Vec<f32>> = views.iter().map(|v| vec![7.0; m * v.n()]).collect();
            let mut jobs: Vec<_> = layers
                .iter()
                .zip(&mut outs)
                .map(|(&(w, b), o)| (w, b, &mut o[..]))
                .collect();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| matmul_nt_many(&x, m, &mut jobs));
            let got: Vec<Vec<u32>> = outs.iter().map(|o| bits(o)).collect();
            assert_eq!(got, want, "m={m}, {threads} threads");
        }
    }
    matmul_nt_many(&[], 0, &mut []);
}

#[test]
fn empty_shapes_are_fine() {
    let view = WeightView::new(&[], Dtype::F32, 0, 5).unwrap();
    matmul_nt(&[0.0; 10], 2, &view, None, &mut []);
    let bytes = f32_bytes(&[]);
    let view = WeightView::new(&bytes, Dtype::F32, 3, 0).unwrap();
    let mut out = vec![9f32; 6];
    matmul_nt(&[], 2, &view, Some(&[1.0, 2.0, 3.0]), &mut out);
    assert_eq!(out, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
}
