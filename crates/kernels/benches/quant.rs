//! Criterion benches of `matmul_nt` with quantized weights on SmolLM2-135M's linear shapes,
//! beside the bf16 path on the same product.
//!
//! - decode (`m` = 1): throughput is weight bytes streamed (GiB/s; decode reads every weight
//!   once per token, so the memory bandwidth is the floor);
//! - prefill (`m` = 256): throughput is multiply-adds ×2 (`elem/s` reads as op/s).
//!
//! The K-quants need `k` a multiple of 256, so they run on the `1536to576` shape only
//! (llama.cpp's Q4_K_M files store SmolLM2's 576-wide matrices in legacy types too).
//!
//! Run with `cargo bench -p sieve-kernels --bench quant`; filter with a name, e.g.
//! `cargo bench -p sieve-kernels --bench quant -- decode/576to1536`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sieve_kernels::quant::QuantType;
use sieve_kernels::{matmul_nt, Dtype, WeightView, Weights};

/// `(name, n = out, k = in)`: attention q/o, MLP up/gate, MLP down, lm_head.
const SHAPES: [(&str, usize, usize); 4] = [
    ("576x576", 576, 576),
    ("576to1536", 1536, 576),
    ("1536to576", 576, 1536),
    ("576to49152", 49152, 576),
];

/// The types benched (the K-quants where `k` allows).
const TYPES: [QuantType; 7] = [
    QuantType::Q8_0,
    QuantType::Q4_0,
    QuantType::Q4_1,
    QuantType::Q5_0,
    QuantType::Q5_1,
    QuantType::Q4K,
    QuantType::Q6K,
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

fn bench(c: &mut Criterion) {
    for (name, n, k) in SHAPES {
        let w = values(n * k, 1);
        let bf16: Vec<u8> = w
            .iter()
            .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
            .collect();
        let quantized: Vec<Weights> = TYPES
            .iter()
            .filter(|t| k.is_multiple_of(t.block_len()))
            .map(|&t| Weights::quantize_f32(&w, t, n, k).unwrap())
            .collect();
        for (phase, m) in [("decode", 1usize), ("prefill", 256)] {
            let mut group = c.benchmark_group(format!("{phase}/{name}"));
            group
                .warm_up_time(Duration::from_millis(300))
                .measurement_time(Duration::from_secs(1));
            if n * k > 1 << 22 || phase == "prefill" {
                group.sample_size(10);
            }
            let x = values(m * k, 2);
            let mut out = vec![0f32; m * n];
            let mut run = |label: String, view: WeightView<'_>, bytes: usize| {
                group.throughput(if phase == "decode" {
                    Throughput::Bytes(bytes as u64)
                } else {
                    Throughput::Elements(2 * (m * n * k) as u64)
                });
                group.bench_function(BenchmarkId::new(label, m), |b| {
                    b.iter(|| matmul_nt(&x, m, &view, None, &mut out))
                });
            };
            let view = WeightView::new(&bf16, Dtype::Bf16, n, k).unwrap();
            run("bf16".into(), view, bf16.len());
            for q in &quantized {
                let view = q.view();
                run(q.format().to_string(), view, view.bytes().len());
            }
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
