//! The K-quants against hand-built blocks, against llama.cpp's own bytes (golden files made
//! by its reference quantizers, see `golden/README.md`), and every SIMD path against the
//! scalar reference, bit for bit.

use super::common::{f16_bytes, pack_scale_min_k4, pack_scales_q3k, QK_K};
use super::q8k::BlockQ8K;
use super::*;

#[cfg(target_arch = "x86_64")]
mod panel;

/// The K types, smallest first.
const TYPES: [QuantType; 5] = [
    QuantType::Q2K,
    QuantType::Q3K,
    QuantType::Q4K,
    QuantType::Q5K,
    QuantType::Q6K,
];

/// A small deterministic generator (xorshift32).
struct Rng(u32);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }
    /// Uniform in `[-0.5, 0.5)`, exactly representable.
    fn uniform(&mut self) -> f32 {
        (self.next() >> 8) as f32 / (1u32 << 24) as f32 - 0.5
    }
    /// Roughly normal (sum of 4 uniforms), exactly computed.
    fn normal(&mut self) -> f32 {
        (self.uniform() + self.uniform()) + (self.uniform() + self.uniform())
    }
}

/// Rows of varied shapes: normal weights at several scales, outliers, one-signed blocks,
/// tiny values, constant blocks and an all-zero block (`blocks` super-blocks).
fn inputs(blocks: usize, seed: u32) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut x = Vec::with_capacity(blocks * QK_K);
    for b in 0..blocks {
        let scale = [0.02f32, 1.0, 0.001, 37.0, 0.3][b % 5];
        for i in 0..QK_K {
            let v = match b % 9 {
                0..=2 => rng.normal() * scale,
                3 => {
                    let v = rng.normal() * scale;
                    if i % 37 == 5 {
                        v * 40.0
                    } else {
                        v
                    }
                }
                4 => rng.uniform().abs() * scale,
                5 => -rng.uniform().abs() * scale - 0.25,
                6 => rng.normal() * 1e-6,
                7 => {
                    if b == 7 {
                        0.0
                    } else {
                        0.75
                    }
                }
                _ => rng.uniform() * scale + 0.1 * scale,
            };
            x.push(v);
        }
    }
    x
}

fn quantized(ty: QuantType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; x.len() / QK_K * ty.block_bytes()];
    quantize_row(ty, x, &mut out);
    out
}

fn dequantized(ty: QuantType, bytes: &[u8]) -> Vec<f32> {
    let mut out = vec![f32::NAN; bytes.len() / ty.block_bytes() * QK_K];
    dequantize_row(ty, bytes, &mut out);
    out
}

fn act(x: &[f32]) -> Vec<BlockQ8K> {
    let mut a = Vec::new();
    quantize_act(x, &mut a);
    a
}

/// Random bytes for a block of `ty`, with finite `f16` scales of moderate size.
fn random_block(ty: QuantType, rng: &mut Rng) -> Vec<u8> {
    let mut b: Vec<u8> = (0..ty.block_bytes()).map(|_| rng.next() as u8).collect();
    let mut put = |at: usize, v: f32| b[at..at + 2].copy_from_slice(&f16_bytes(v));
    match ty {
        QuantType::Q2K => {
            put(80, rng.uniform() * 0.1);
            put(82, rng.uniform() * 0.1);
        }
        QuantType::Q3K => put(108, rng.uniform() * 0.1),
        QuantType::Q4K | QuantType::Q5K => {
            put(0, rng.uniform() * 0.1);
            put(2, rng.uniform() * 0.1);
        }
        _ => put(208, rng.uniform() * 0.1),
    }
    b
}

/// A Q8_K block of random values in `-128..=127` (edge values included) with true `bsums`.
fn random_act(rng: &mut Rng, extreme: bool) -> BlockQ8K {
    let mut a = BlockQ8K::ZERO;
    for q in a.qs.iter_mut() {
        *q = if extreme {
            [-128i8, 127, -127][(rng.next() % 3) as usize]
        } else {
            rng.next() as i8
        };
    }
    for g in 0..16 {
        a.bsums[g] = a.qs[16 * g..16 * g + 16].iter().map(|&q| q as i16).sum();
    }
    a.d = rng.uniform() * 0.01;
    a
}

#[test]
fn hand_built_q4k_and_q5k_blocks_dequantize_as_ggml_states() {
    // Scales 1..=8 and mins 0..8 (sub-blocks 4..8 use the packed high bits: 40.. needs them).
    let sc: [u8; 8] = [1, 2, 3, 4, 40, 50, 60, 63];
    let m: [u8; 8] = [0, 1, 2, 3, 33, 44, 55, 62];
    let (d, dmin) = (0.5f32, 0.25f32);
    let level = |e: usize| ((e * 7 + 3) % 32) as u8;
    let mut q4 = vec![0u8; 144];
    q4[0..2].copy_from_slice(&f16_bytes(d));
    q4[2..4].copy_from_slice(&f16_bytes(dmin));
    q4[4..16].copy_from_slice(&pack_scale_min_k4(&sc, &m));
    let mut q5 = vec![0u8; 176];
    q5[..16].copy_from_slice(&q4[..16]);
    for e in 0..QK_K {
        let (chunk, hi, l) = (e / 64, (e % 64) / 32, e % 32);
        let l4 = level(e) & 0xf;
        q4[16 + 32 * chunk + l] |= l4 << (4 * hi);
        q5[48 + 32 * chunk + l] |= l4 << (4 * hi);
        q5[16 + l] |= (level(e) >> 4) << (e / 32);
    }
    let y4 = dequantized(QuantType::Q4K, &q4);
    let y5 = dequantized(QuantType::Q5K, &q5);
    for e in 0..QK_K {
        let s = e / 32;
        let want4 = (d * sc[s] as f32) * (level(e) & 0xf) as f32 - dmin * m[s] as f32;
        let want5 = (d * sc[s] as f32) * level(e) as f32 - dmin * m[s] as f32;
        assert_eq!(y4[e], want4, "q4_k element {e}");
        assert_eq!(y5[e], want5, "q5_k element {e}");
    }
    // Spot values, by hand: element 0 has level 3, sub-block 0 (sc 1, m 0): 0.5 * 3 = 1.5.
    assert_eq!(y4[0], 1.5);
    // Element 255: level (255*7+3)%32 = 12, sub-block 7 (sc 63, m 62): 0.5*63*12 - 0.25*62.
    assert_eq!(y4[255], 378.0 - 15.5);
}

#[test]
fn hand_built_q2k_q3k_q6k_blocks_dequantize_as_ggml_states() {
    // Q2_K: scale nibble s % 16, min nibble (15 - s).
    let mut q2 = vec![0u8; 84];
    for (s, byte) in q2[..16].iter_mut().enumerate() {
        *byte = (s as u8 % 16) | ((15 - s as u8) << 4);
    }
    q2[80..82].copy_from_slice(&f16_bytes(0.125));
    q2[82..84].copy_from_slice(&f16_bytes(2.0));
    let l2 = |e: usize| ((e * 5 + 1) % 4) as u8;
    for e in 0..QK_K {
        q2[16 + 32 * (e / 128) + e % 32] |= l2(e) << (2 * ((e % 128) / 32));
    }
    let y = dequantized(QuantType::Q2K, &q2);
    for (e, &got) in y.iter().enumerate() {
        let s = e / 16;
        let want = (0.125 * s as f32) * l2(e) as f32 - 2.0 * (15 - s) as f32;
        assert_eq!(got, want, "q2_k element {e}");
    }
    // Q3_K: biased scales (s * 4 + 1) % 64, levels (e * 3) % 8 - 4.
    let biased: [u8; 16] = std::array::from_fn(|s| ((s * 4 + 1) % 64) as u8);
    let mut q3 = vec![0u8; 110];
    q3[96..108].copy_from_slice(&pack_scales_q3k(&biased));
    q3[108..110].copy_from_slice(&f16_bytes(0.5));
    let l3 = |e: usize| ((e * 3) % 8) as i32 - 4;
    for e in 0..QK_K {
        let u = (l3(e) + 4) as u8;
        q3[32 + 32 * (e / 128) + e % 32] |= (u & 3) << (2 * ((e % 128) / 32));
        q3[e % 32] |= (u >> 2) << (e / 32);
    }
    let y = dequantized(QuantType::Q3K, &q3);
    for (e, &got) in y.iter().enumerate() {
        let want = (0.5 * (biased[e / 16] as i32 - 32) as f32) * l3(e) as f32;
        assert_eq!(got, want, "q3_k element {e}");
    }
    // Q6_K: scales s * 9 - 70 (signed), levels (e * 11) % 64 - 32.
    let mut q6 = vec![0u8; 210];
    for s in 0..16 {
        q6[192 + s] = (s as i32 * 9 - 70) as i8 as u8;
    }
    q6[208..210].copy_from_slice(&f16_bytes(0.03125));
    let l6 = |e: usize| ((e * 11) % 64) as i32 - 32;
    for e in 0..QK_K {
        let u = (l6(e) + 32) as u8;
        let (h, g, l) = (e / 128, (e % 128) / 32, e % 32);
        q6[64 * h + 32 * (g % 2) + l] |= (u & 0xf) << (4 * (g / 2));
        q6[128 + 32 * h + l] |= (u >> 4) << (2 * g);
    }
    let y = dequantized(QuantType::Q6K, &q6);
    for (e, &got) in y.iter().enumerate() {
        let sc = (e / 16) as i32 * 9 - 70;
        let want = 0.03125 * sc as f32 * l6(e) as f32;
        assert_eq!(got, want, "q6_k element {e}");
    }
}

/// Dequantized weights stay within a per-type fraction of each block's range, and the
/// integer dot product equals the float dot product of the dequantized values within rounding.
#[test]
fn quantize_then_dequantize_is_close_and_dot_matches_floats() {
    let x = inputs(45, 7);
    // Worst relative RMS error per block against the block's RMS, per type (2..6 bits).
    let bounds = [0.6f32, 0.35, 0.15, 0.08, 0.04];
    for (ty, bound) in TYPES.into_iter().zip(bounds) {
        let q = quantized(ty, &x);
        let y = dequantized(ty, &q);
        for (b, (xb, yb)) in x.chunks(QK_K).zip(y.chunks(QK_K)).enumerate() {
            let rms = (xb.iter().map(|v| v * v).sum::<f32>() / QK_K as f32).sqrt();
            let err = (xb
                .iter()
                .zip(yb)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f32>()
                / QK_K as f32)
                .sqrt();
            // Tiny blocks: their scales fall into f16's subnormals (as in llama.cpp), so they
            // only have to do no worse than zero.
            let bound = if rms < 5e-3 { 1.0 } else { bound };
            assert!(err <= bound * rms, "{ty} block {b}: rms {rms}, error {err}");
        }
        // The dot product of the blocks with Q8_K activations equals, up to float rounding,
        // the float dot of the dequantized weights with the dequantized activations.
        let mut rng = Rng(99);
        let xa: Vec<f32> = (0..x.len()).map(|_| rng.normal()).collect();
        let a = act(&xa);
        let got = dot_row(Isa::Scalar, ty, &q, &a);
        let want: f64 = y
            .iter()
            .enumerate()
            .map(|(i, &w)| w as f64 * (a[i / QK_K].d * a[i / QK_K].qs[i % QK_K] as f32) as f64)
            .sum();
        let mag: f64 = y.iter().map(|w| (w.abs() * 2.0) as f64).sum();
        assert!(
            ((got as f64) - want).abs() <= 1e-5 * mag,
            "{ty}: {got} vs {want}"
        );
    }
}

#[test]
fn every_path_gives_the_reference_bits() {
    let paths = Path::available();
    let mut rng = Rng(0x2468_ace1);
    for ty in TYPES {
        for nblocks in [1usize, 2, 3, 7, 8, 9, 17] {
            for trial in 0..12 {
                let w: Vec<u8> = (0..nblocks)
                    .flat_map(|_| random_block(ty, &mut rng))
                    .collect();
                let a: Vec<BlockQ8K> = (0..nblocks)
                    .map(|_| random_act(&mut rng, trial % 4 == 3))
                    .collect();
                let want = dot_row_on(Path::Scalar, ty, &w, &a);
                assert!(want.is_finite());
                for &p in &paths {
                    let got = dot_row_on(p, ty, &w, &a);
                    assert_eq!(got.to_bits(), want.to_bits(), "{ty} {p:?} {nblocks} blocks");
                }
            }
        }
        // Quantized real-looking rows too, and all-255 / all-0 weight bytes.
        let x = inputs(18, 3);
        let q = quantized(ty, &x);
        let a = act(&inputs(18, 5));
        let want = dot_row_on(Path::Scalar, ty, &q, &a);
        for &p in &paths {
            assert_eq!(
                dot_row_on(p, ty, &q, &a).to_bits(),
                want.to_bits(),
                "{ty} {p:?}"
            );
        }
        for fill in [0u8, 0xff] {
            let mut w = vec![fill; 3 * ty.block_bytes()];
            for blk in w.chunks_mut(ty.block_bytes()) {
                let at = match ty {
                    QuantType::Q2K => 80,
                    QuantType::Q3K => 108,
                    QuantType::Q6K => 208,
                    _ => 0,
                };
                blk[at..at + 2].copy_from_slice(&f16_bytes(0.5));
            }
            let a: Vec<BlockQ8K> = (0..3).map(|_| random_act(&mut rng, true)).collect();
            let want = dot_row_on(Path::Scalar, ty, &w, &a);
            for &p in &paths {
                assert_eq!(
                    dot_row_on(p, ty, &w, &a).to_bits(),
                    want.to_bits(),
                    "{ty} {p:?} fill {fill}"
                );
            }
        }
    }
}

#[test]
fn several_activation_rows_give_each_rows_bits() {
    let mut rng = Rng(0x1357_9bdf);
    for ty in TYPES {
        for nblocks in [1usize, 6, 9] {
            let w: Vec<u8> = (0..nblocks)
                .flat_map(|_| random_block(ty, &mut rng))
                .collect();
            for rows in 0..=9 {
                let acts: Vec<BlockQ8K> = (0..rows * nblocks)
                    .map(|i| random_act(&mut rng, i % 5 == 0))
                    .collect();
                let want: Vec<u32> = (0..rows)
                    .map(|r| {
                        let a = &acts[r * nblocks..(r + 1) * nblocks];
                        dot_row_on(Path::Scalar, ty, &w, a).to_bits()
                    })
                    .collect();
                for p in Path::available() {
                    let mut out = vec![f32::NAN; rows];
                    dot_rows_on(p, ty, &w, &acts, &mut out);
                    let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "{ty} {p:?} {nblocks} blocks {rows} rows");
                }
                let mut out = vec![f32::NAN; rows];
                dot_rows(Isa::best(), ty, &w, &acts, &mut out);
                assert!(out.iter().zip(&want).all(|(o, w)| o.to_bits() == *w));
            }
        }
    }
}

/// Degenerate input never panics (this runs with overflow checks in debug builds): the
/// quantizers on NaN, infinities, huge and subnormal values, and the dot products and
/// dequantization on arbitrary bytes (NaN and infinite `f16` scales included).
#[test]
fn degenerate_input_never_panics() {
    let mut rng = Rng(0xdead_beef);
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        -f32::MAX,
        1e-42,
        -0.0,
        3e38,
    ];
    for trial in 0..40 {
        let x: Vec<f32> = (0..2 * QK_K)
            .map(|i| {
                if (i + trial) % 7 == 0 {
                    specials[(rng.next() % 8) as usize]
                } else {
                    f32::from_bits(rng.next())
                }
            })
            .collect();
        let a = act(&x);
        for ty in TYPES {
            let q = quantized(ty, &x);
            let _ = dequantized(ty, &q);
            let w: Vec<u8> = (0..2 * ty.block_bytes())
                .map(|_| rng.next() as u8)
                .collect();
            let _ = dequantized(ty, &w);
            for p in Path::available() {
                let _ = dot_row_on(p, ty, &w, &a);
                let _ = dot_row_on(p, ty, &q, &a);
            }
        }
    }
}

#[test]
fn dot_row_on_best_isa_equals_the_reference() {
    let x = inputs(6, 11);
    let a = act(&inputs(6, 12));
    for ty in TYPES {
        let q = quantized(ty, &x);
        let want = dot_row(Isa::Scalar, ty, &q, &a);
        for isa in Isa::ALL {
            assert_eq!(
                dot_row(isa, ty, &q, &a).to_bits(),
                want.to_bits(),
                "{ty} {isa:?}"
            );
        }
    }
    assert!(dot_row(Isa::best(), QuantType::Q4_0, &[0; 18], &a).is_nan());
}

/// The bytes llama.cpp's reference quantizers write for [`inputs`]`(45, 7)`, and the Q8_K
/// blocks of [`inputs`]`(45, 8)`.
#[test]
fn quantized_bytes_equal_llama_cpps() {
    let x = inputs(45, 7);
    // The committed inputs are these (the golden files were made from them).
    let file: &[u8] = include_bytes!("golden/weights.f32");
    assert!(file.chunks(4).zip(&x).all(|(c, v)| c == v.to_le_bytes()));
    let file: &[u8] = include_bytes!("golden/acts.f32");
    assert!(file
        .chunks(4)
        .zip(&inputs(45, 8))
        .all(|(c, v)| c == v.to_le_bytes()));
    let golden: [(QuantType, &[u8]); 5] = [
        (QuantType::Q2K, include_bytes!("golden/q2_k.bin")),
        (QuantType::Q3K, include_bytes!("golden/q3_k.bin")),
        (QuantType::Q4K, include_bytes!("golden/q4_k.bin")),
        (QuantType::Q5K, include_bytes!("golden/q5_k.bin")),
        (QuantType::Q6K, include_bytes!("golden/q6_k.bin")),
    ];
    for (ty, want) in golden {
        let got = quantized(ty, &x);
        assert_eq!(got.len(), want.len(), "{ty}");
        for (b, (g, w)) in got
            .chunks(ty.block_bytes())
            .zip(want.chunks(ty.block_bytes()))
            .enumerate()
        {
            assert_eq!(g, w, "{ty} block {b}");
        }
    }
    let want: &[u8] = include_bytes!("golden/q8_k.bin");
    let a = act(&inputs(45, 8));
    assert_eq!(want.len(), a.len() * 292);
    for (b, (blk, w)) in a.iter().zip(want.chunks(292)).enumerate() {
        let mut bytes = blk.d.to_le_bytes().to_vec();
        bytes.extend(blk.qs.iter().map(|&q| q as u8));
        bytes.extend(blk.bsums.iter().flat_map(|s| s.to_le_bytes()));
        // llama.cpp leaves an all-zero block's bsums unwritten; compare them elsewhere only.
        let len = if blk.d == 0.0 { 260 } else { 292 };
        assert_eq!(&bytes[..len], &w[..len], "q8_k block {b}");
    }
}

/// Writes the inputs of [`quantized_bytes_equal_llama_cpps`] for the golden-file generator
/// (`golden/README.md`): `cargo test -p sieve-kernels write_golden_inputs -- --ignored`.
#[test]
#[ignore]
fn write_golden_inputs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/g2b");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, seed) in [("weights.f32", 7), ("acts.f32", 8)] {
        let bytes: Vec<u8> = inputs(45, seed)
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Single-thread throughput of each type's row dot product on every path, as weight bytes
/// read per second, for an `n × k` weight (`k` = 1536) in cache (n = 1536) and past the L3
/// (n = 32 768): the best of 25 interleaved rounds (the machine is shared); `KQUANT_K` sets
/// another `k`. Not a timed test:
/// run it by hand in release,
/// `cargo test --release -p sieve-kernels --lib kquant_throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn kquant_throughput() {
    use std::time::Instant;
    let k: usize = std::env::var("KQUANT_K")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1536);
    let a = act(&inputs(k / QK_K, 21));
    let paths: Vec<Path> = Path::available()
        .into_iter()
        .filter(|&p| p != Path::Scalar)
        .collect();
    for n in [1536usize, 32_768 * 1536 / k] {
        for ty in TYPES {
            let row: Vec<u8> = quantized(ty, &inputs(k / QK_K, 22));
            let w: Vec<u8> = (0..n).flat_map(|_| row.iter().copied()).collect();
            let mut best = vec![f64::INFINITY; paths.len()];
            let mut sink = 0f32;
            for _ in 0..25 {
                for (p, best) in paths.iter().zip(best.iter_mut()) {
                    let t = Instant::now();
                    for r in w.chunks_exact(row.len()) {
                        sink += dot_row_on(*p, ty, r, &a);
                    }
                    *best = best.min(t.elapsed().as_secs_f64());
                }
            }
            let line: Vec<String> = paths
                .iter()
                .zip(&best)
                .map(|(p, t)| format!("{p:?} {:.1} GB/s", w.len() as f64 / t / 1e9))
                .collect();
            println!("{ty} {n}x{k}: {} [{sink}]", line.join(", "));
            // Prefill-like: 4 activation rows per weight row, as weight bytes x 4 per second.
            let acts: Vec<BlockQ8K> = (0..4).flat_map(|_| a.iter().copied()).collect();
            let mut best4 = vec![f64::INFINITY; paths.len()];
            let mut out = [0f32; 4];
            for _ in 0..10 {
                for (p, best) in paths.iter().zip(best4.iter_mut()) {
                    let t = Instant::now();
                    for r in w.chunks_exact(row.len()) {
                        dot_rows_on(*p, ty, r, &acts, &mut out);
                        sink += out[3];
                    }
                    *best = best.min(t.elapsed().as_secs_f64());
                }
            }
            let line: Vec<String> = paths
                .iter()
                .zip(&best4)
                .map(|(p, t)| format!("{p:?} {:.1} GB/s", 4.0 * w.len() as f64 / t / 1e9))
                .collect();
            println!("{ty} {n}x{k} x4 rows: {} [{sink}]", line.join(", "));
        }
    }
}
