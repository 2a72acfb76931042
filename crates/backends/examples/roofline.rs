//! The machine's two ceilings for a model step, to judge `sieve bench model` against:
//!
//! - **read bandwidth**: GB/s of summing a 1 GiB `f32` buffer (more than any cache), the best
//!   of 5 passes; a decode step must read every weight once, so `weight bytes ÷ bandwidth`
//!   is its floor;
//! - **large-matmul FLOP rate** of each CPU backend: GFLOP/s of a [1024, 2048] × [2048, 2048]
//!   product (median of 5 after a warm-up), the rate prefill can hope for.
//!
//! Run: `cargo run --release -p sieve-backends --example roofline`.

use std::time::Instant;

use burn_flex::{Flex, FlexDevice};
use burn_ndarray::{NdArray, NdArrayDevice};
use burn_tensor::backend::Backend;
use burn_tensor::{Distribution, Tensor};

fn bandwidth_gb_s() -> f64 {
    let n = 1usize << 28; // 2^28 f32 = 1 GiB
    let buffer: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        let mut lanes = [0.0f32; 16];
        for chunk in buffer.chunks_exact(16) {
            for (l, &x) in lanes.iter_mut().zip(chunk) {
                *l += x;
            }
        }
        std::hint::black_box(lanes);
        best = best.min(t.elapsed().as_secs_f64());
    }
    (n * 4) as f64 / best / 1e9
}

fn matmul_gflop_s<B: Backend>(device: &B::Device) -> f64 {
    let (m, k, n) = (1024usize, 2048usize, 2048usize);
    let a = Tensor::<B, 2>::random([m, k], Distribution::Default, device);
    let b = Tensor::<B, 2>::random([k, n], Distribution::Default, device);
    let _ = a.clone().matmul(b.clone()).into_data();
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let _ = a.clone().matmul(b.clone()).into_data();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    2.0 * (m * k * n) as f64 / times[2] / 1e9
}

fn main() {
    println!(
        "read bandwidth: {:.1} GB/s (sum over 1 GiB, best of 5)",
        bandwidth_gb_s()
    );
    println!(
        "matmul ndarray: {:.1} GFLOP/s ([1024,2048]x[2048,2048], median of 5)",
        matmul_gflop_s::<NdArray>(&NdArrayDevice::Cpu)
    );
    println!(
        "matmul flex:    {:.1} GFLOP/s ([1024,2048]x[2048,2048], median of 5)",
        matmul_gflop_s::<Flex>(&FlexDevice)
    );
}
