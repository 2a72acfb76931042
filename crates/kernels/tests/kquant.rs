//! The K-quants through the public API, against llama.cpp's own numbers (golden files made
//! by llama.cpp's code, see `src/quant/k/golden/README.md`):
//!
//! - quantizing (what `--quantize` and `sieve quantize` run) writes llama.cpp's bytes;
//! - a product with K-quant weights equals llama.cpp's dot products up to float summation
//!   order, with the bound measured here stated in the test.

use sieve_kernels::quant::{self, QuantType};
use sieve_kernels::{matmul_nt, Isa, WeightView, Weights};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/quant/k/golden");

/// The K types with their golden file stem.
const TYPES: [(QuantType, &str); 5] = [
    (QuantType::Q2K, "q2_k"),
    (QuantType::Q3K, "q3_k"),
    (QuantType::Q4K, "q4_k"),
    (QuantType::Q5K, "q5_k"),
    (QuantType::Q6K, "q6_k"),
];

fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{GOLDEN}/{name}")).unwrap()
}

fn floats(name: &str) -> Vec<f32> {
    read(name)
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn quantizing_writes_llama_cpps_bytes() {
    let x = floats("weights.f32");
    assert_eq!(x.len(), 45 * 256);
    for (ty, stem) in TYPES {
        let want = read(&format!("{stem}.bin"));
        let mut got = vec![0u8; want.len()];
        quant::quantize_row(ty, &x, &mut got).unwrap();
        assert!(got == want, "{ty}: quantize_row differs from llama.cpp");
        // The owned weight `--quantize` builds, 5 rows of 2304: the same bytes.
        let w = Weights::quantize_f32(&x, ty, 5, 9 * 256).unwrap();
        assert!(
            w.view().bytes() == want.as_slice(),
            "{ty}: Weights::quantize_f32"
        );
    }
}

#[test]
fn products_track_llama_cpps_dot_products() {
    let x = floats("acts.f32");
    let (m, n, k) = (5, 5, 9 * 256);
    for (ty, stem) in TYPES {
        let bytes = read(&format!("{stem}.bin"));
        let want = floats(&format!("dots_{stem}.f32"));
        let w = WeightView::quantized(&bytes, ty, n, k).unwrap();
        let mut got = vec![0f32; m * n];
        matmul_nt(&x, m, &w, None, &mut got);
        // The dequantized row gives each output's magnitude scale: Σ |w| · |x|.
        let mut worst = 0f64;
        for i in 0..m {
            for j in 0..n {
                let row = w.row_f32(j);
                let scale: f64 = row
                    .iter()
                    .zip(&x[i * k..(i + 1) * k])
                    .map(|(a, b)| (a.abs() * b.abs()) as f64)
                    .sum();
                let diff = (got[i * n + j] as f64 - want[i * n + j] as f64).abs() / scale;
                worst = worst.max(diff);
            }
        }
        println!("{ty}: worst |sieve - llama.cpp| / Σ|w·x| = {worst:.2e}");
        assert!(worst <= 1e-6, "{ty}: {worst:e}");
        // And every instruction set gives the same bits (the contract; also tested per type
        // in the unit tests).
        for isa in Isa::available() {
            let mut other = vec![0f32; m * n];
            sieve_kernels::matmul_nt_on(isa, &x, m, &w, None, &mut other);
            let same = other
                .iter()
                .zip(&got)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{ty} {isa:?}");
        }
    }
}
