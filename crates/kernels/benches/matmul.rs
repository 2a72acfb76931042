//! Criterion benches of `matmul_nt` on SmolLM2-135M's linear shapes, beside the `gemm` crate
//! (what burn-flex's matmul calls) on the same product with an f32 `[in, out]` weight.
//!
//! - decode (`m` = 1, 4, 8): throughput is weight bytes streamed (GiB/s; the memory floor);
//! - prefill (`m` = 256): throughput is flops (`elem/s` reads as flop/s).
//!
//! Run with `cargo bench -p sieve-kernels --bench matmul`; filter with a name, e.g.
//! `cargo bench -p sieve-kernels --bench matmul -- decode/576x49152`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sieve_kernels::{matmul_nt, Dtype, WeightView};

/// `(name, n = out, k = in)`: attention q/o, MLP up/gate, MLP down, lm_head.
const SHAPES: [(&str, usize, usize); 4] = [
    ("576x576", 576, 576),
    ("576to1536", 1536, 576),
    ("1536to576", 576, 1536),
    ("576to49152", 49152, 576),
];

fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len)
        .map(|i| {
            ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                / (1 << 24) as f32
                - 0.5
        })
        .collect()
}

fn bytes_of(w: &[f32], dtype: Dtype) -> Vec<u8> {
    match dtype {
        Dtype::F32 => w.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Dtype::Bf16 => w
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect(),
        Dtype::F16 => w
            .iter()
            .flat_map(|&x| half::f16::from_f32(x).to_le_bytes())
            .collect(),
    }
}

/// `gemm`'s `x @ wt` with `wt` the contiguous `[k, n]` transpose, all threads.
fn gemm_f32(x: &[f32], m: usize, wt: &[f32], n: usize, k: usize, out: &mut [f32]) {
    // SAFETY: `x` is `[m, k]`, `wt` `[k, n]`, `out` `[m, n]`, all row-major and in bounds.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            x.as_ptr(),
            1,
            k as isize,
            wt.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::Rayon(0),
        )
    }
}

fn bench(c: &mut Criterion) {
    for (name, n, k) in SHAPES {
        let w = values(n * k, 1);
        let wt: Vec<f32> = (0..k * n).map(|i| w[(i % n) * k + i / n]).collect();
        for (phase, ms) in [("decode", &[1usize, 4, 8][..]), ("prefill", &[256][..])] {
            let mut group = c.benchmark_group(format!("{phase}/{name}"));
            group
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            if n * k > 1 << 22 {
                group.sample_size(10);
            }
            for &m in ms {
                let x = values(m * k, 2);
                let mut out = vec![0f32; m * n];
                for dtype in [Dtype::Bf16, Dtype::F32] {
                    let bytes = bytes_of(&w, dtype);
                    let view = WeightView::new(&bytes, dtype, n, k).unwrap();
                    group.throughput(if phase == "decode" {
                        Throughput::Bytes(bytes.len() as u64)
                    } else {
                        Throughput::Elements(2 * (m * n * k) as u64)
                    });
                    group.bench_function(BenchmarkId::new(format!("sieve-{dtype}"), m), |b| {
                        b.iter(|| matmul_nt(&x, m, &view, None, &mut out))
                    });
                }
                group.throughput(if phase == "decode" {
                    Throughput::Bytes((n * k * 4) as u64)
                } else {
                    Throughput::Elements(2 * (m * n * k) as u64)
                });
                group.bench_function(BenchmarkId::new("gemm-f32", m), |b| {
                    b.iter(|| gemm_f32(&x, m, &wt, n, k, &mut out))
                });
            }
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
