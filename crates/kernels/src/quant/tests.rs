//! Every legacy type's dot product on every kernel this CPU runs, bit for bit against the
//! scalar reference: random blocks, all-zero blocks, extreme levels and scales, ragged block
//! counts and every tile height.

use super::act::{Act, ActRow};
use super::dot::{dot_rows, reference, Kernel, TILE_ROWS};
use super::QuantType;

const LEGACY: [QuantType; 5] = [
    QuantType::Q4_0,
    QuantType::Q4_1,
    QuantType::Q5_0,
    QuantType::Q5_1,
    QuantType::Q8_0,
];

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Random weight bytes of `blocks` blocks: random levels, scales from `scale` (f16 bits),
/// with some all-zero blocks and some blocks of extreme levels.
fn weight_row(ty: QuantType, blocks: usize, rng: &mut Rng, scale: f32) -> Vec<u8> {
    let size = ty.block_bytes();
    let mut out = vec![0u8; blocks * size];
    for b in out.chunks_exact_mut(size) {
        let kind = rng.next() % 8;
        for v in b.iter_mut() {
            *v = match kind {
                0 => 0,
                1 => 0xFF,
                2 => 0x80,
                _ => rng.next() as u8,
            };
        }
        let d = half::f16::from_f32(rng.unit() * scale)
            .to_bits()
            .to_le_bytes();
        let m = half::f16::from_f32(rng.unit() * scale)
            .to_bits()
            .to_le_bytes();
        if kind != 0 {
            b[0..2].copy_from_slice(&d);
            if matches!(ty, QuantType::Q4_1 | QuantType::Q5_1) {
                b[2..4].copy_from_slice(&m);
            }
        }
    }
    out
}

/// Activation rows: random, all-zero, one huge value, alternating extremes, all `-127`
/// (the AVX2 kernels' 16-bit sums at their largest).
fn act_rows(m: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    (0..m)
        .flat_map(|r| {
            let kind = r % 5;
            (0..k)
                .map(|i| match kind {
                    0 => rng.unit() * 3.0,
                    1 => 0.0,
                    2 if i % 37 == 0 => 6.0e4,
                    2 => rng.unit(),
                    4 => -1.0,
                    _ => {
                        if i % 2 == 0 {
                            -1.0e3
                        } else {
                            1.0e3
                        }
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_kernel_gives_the_reference_bits() {
    let kernels = Kernel::available();
    eprintln!("kernels: {kernels:?}");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for ty in LEGACY {
        for blocks in [1, 2, 7, 8, 9, 16, 18, 23, 48] {
            let k = blocks * 32;
            let m = 6;
            let x = act_rows(m, k, &mut rng);
            let act = Act::new(crate::Isa::best(), &x, m, k);
            let rows: Vec<ActRow<'_>> = (0..m).map(|r| act.row(r)).collect();
            for scale in [1e-3f32, 1.0, 6.0e4] {
                let w = weight_row(ty, blocks, &mut rng, scale);
                let want: Vec<u32> = rows
                    .iter()
                    .map(|&a| reference(ty, &w, a).to_bits())
                    .collect();
                for &kernel in &kernels {
                    for tile in 1..=TILE_ROWS {
                        for r0 in (0..m).step_by(tile) {
                            let t = tile.min(m - r0);
                            let mut got = [0f32; TILE_ROWS];
                            dot_rows(kernel, ty, &w, &rows[r0..r0 + t], &mut got[..t]);
                            for (i, g) in got[..t].iter().enumerate() {
                                let want = want[r0 + i];
                                assert!(
                                    g.to_bits() == want
                                        || (g.is_nan() && f32::from_bits(want).is_nan()),
                                    "{ty} {kernel:?} blocks {blocks} row {} tile {tile}: {g} vs {}",
                                    r0 + i,
                                    f32::from_bits(want)
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A panel kernel's fill and multiply: `(ty, w, count, blocks, rows, bias, out, n)` fills a
/// panel with the `count` rows of `blocks` blocks in `w` and writes `rows`' products with
/// them (plus `bias`) at `out` (rows `n` apart).
#[cfg(target_arch = "x86_64")]
type PanelRun<'a> =
    &'a dyn Fn(QuantType, &[u8], usize, usize, &[ActRow<'_>], Option<&[f32]>, *mut f32, usize);

/// Checks a panel kernel of `width` weight rows (`run`) bit for bit against the scalar
/// reference: every type, ragged block counts, panels of `counts` rows (lanes past them
/// unwritten), `m` activation rows given `tiles` rows at a time (every tile height), with
/// and without a bias.
#[cfg(target_arch = "x86_64")]
fn check_panel(
    name: &str,
    width: usize,
    counts: &[usize],
    m: usize,
    tiles: &[usize],
    run: PanelRun<'_>,
) {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    for ty in LEGACY {
        for blocks in [1, 2, 7, 8, 9, 16, 18, 23, 48] {
            let k = blocks * 32;
            let x = act_rows(m, k, &mut rng);
            let act = Act::new(crate::Isa::best(), &x, m, k);
            let rows: Vec<ActRow<'_>> = (0..m).map(|r| act.row(r)).collect();
            for (i, &count) in counts.iter().enumerate() {
                let scale = [1.0, 6.0e4, 1e-3][i % 3];
                let rb = ty.row_bytes(k).unwrap();
                let w = weight_row(ty, blocks * count, &mut rng, scale);
                let bias: Vec<f32> = (0..count).map(|_| rng.unit() * 4.0).collect();
                let wants: Vec<f32> = (0..m * count)
                    .map(|i| reference(ty, &w[(i % count) * rb..][..rb], rows[i / count]))
                    .collect();
                for with_bias in [false, true] {
                    for &tile in tiles {
                        let n = width + 3;
                        let sentinel = f32::from_bits(0x7FC0_1234);
                        let mut out = vec![sentinel; m * n];
                        for r0 in (0..m).step_by(tile) {
                            let t = tile.min(m - r0);
                            // SAFETY: `out` holds `m` rows of `n ≥ count` columns.
                            let at = unsafe { out.as_mut_ptr().add(r0 * n) };
                            let b = with_bias.then_some(&bias[..]);
                            run(ty, &w, count, blocks, &rows[r0..r0 + t], b, at, n);
                        }
                        for r in 0..m {
                            for j in 0..n {
                                let g = out[r * n + j];
                                if j >= count {
                                    assert_eq!(
                                        g.to_bits(),
                                        sentinel.to_bits(),
                                        "{name} {ty} wrote {j}"
                                    );
                                    continue;
                                }
                                let mut want = wants[r * count + j];
                                if with_bias {
                                    want += bias[j];
                                }
                                assert!(
                                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                                    "{name} {ty} blocks {blocks} rows {count} tile {tile} bias \
                                     {with_bias}: out[{r}][{j}] {g} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The AVX-512 VNNI prefill panel kernel (16 weight rows across the lanes) gives the scalar
/// reference's bits for every output (`check_panel`: panels of 1 to 16 rows).
#[cfg(target_arch = "x86_64")]
#[test]
fn panel_kernel_gives_the_reference_bits() {
    use super::panel::{fill, multiply, Panel, PANEL};
    if !Kernel::available().contains(&Kernel::Avx512Vnni) {
        eprintln!("no AVX-512 VNNI: panel kernel not tested");
        return;
    }
    check_panel(
        "avx512",
        PANEL,
        &[16, 1, 5, 13],
        9,
        &[1, 3, 4, 9],
        &|ty, w, count, blocks, rows, bias, out, n| {
            let mut panel = Panel::new(blocks);
            // SAFETY: the CPU has AVX-512 VNNI (checked above); `w` holds `count` rows; `out`
            // holds the rows' `count` columns `n` apart (`check_panel`).
            unsafe {
                fill(ty, w, count, &mut panel);
                multiply(ty, &panel, rows, bias, out, n);
            }
        },
    );
}

/// The AMX-INT8 panel kernel (the VNNI panel's weights, 16 activation rows a tile product,
/// the rest on the VNNI panel) gives the scalar reference's bits for every output
/// (`check_panel`: 40 activation rows given 16, 33 and 40 at a time). Where the CPU has no
/// AMX-INT8 it says so and passes, unless `SIEVE_EXPECT_AMX` is set (on a machine that has
/// it, so that a lost detection fails).
#[cfg(target_arch = "x86_64")]
#[test]
fn amx_panel_kernel_gives_the_reference_bits() {
    use super::panel::{fill, Panel, PANEL};
    if !super::amx::supported() {
        assert!(
            std::env::var_os("SIEVE_EXPECT_AMX").is_none(),
            "SIEVE_EXPECT_AMX is set but AMX-INT8 is not available"
        );
        eprintln!("no AMX-INT8: AMX panel kernel not tested");
        return;
    }
    check_panel(
        "amx",
        PANEL,
        &[16, 1, 5, 13],
        40,
        &[16, 33, 40],
        &|ty, w, count, blocks, rows, bias, out, n| {
            let mut panel = Panel::new(blocks);
            // SAFETY: the CPU has AMX-INT8 and AVX-512 VNNI (`amx::supported`, checked
            // above); `w` holds `count` rows; `out` holds the rows' `count` columns `n` apart.
            unsafe {
                fill(ty, w, count, &mut panel);
                super::amx::multiply(ty, &panel, rows, bias, out, n);
            }
        },
    );
}

/// The AVX2 prefill panel kernel (8 weight rows across the lanes; `vpmaddubsw`, and AVX-VNNI
/// `vpdpbusd` where the CPU has it) gives the scalar reference's bits for every output
/// (`check_panel`: panels of 1 to 8 rows).
#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_panel_kernel_gives_the_reference_bits() {
    use super::panel_avx2::{fill, multiply, Panel, PANEL};
    let kernels = Kernel::available();
    if !kernels.contains(&Kernel::Avx2) {
        eprintln!("no AVX2: AVX2 panel kernel not tested");
        return;
    }
    let counts: Vec<usize> = (1..=PANEL).rev().collect();
    for vnni in [false, true] {
        if vnni && !kernels.contains(&Kernel::AvxVnni) {
            eprintln!("no AVX-VNNI: AVX2 panel kernel with vpdpbusd not tested");
            continue;
        }
        let name = if vnni { "avx-vnni" } else { "avx2" };
        check_panel(
            name,
            PANEL,
            &counts,
            9,
            &[1, 3, 4, 9],
            &|ty, w, count, blocks, rows, bias, out, n| {
                let mut panel = Panel::new(blocks, vnni);
                // SAFETY: the CPU has AVX2 (and AVX-VNNI when `vnni`), checked above; `w`
                // holds `count` rows; `out` holds the rows' `count` columns `n` apart.
                unsafe {
                    fill(ty, w, count, &mut panel);
                    multiply(ty, &panel, rows, bias, out, n);
                }
            },
        );
    }
}

/// Through the driver, with and without the VNNI kernels (`NO_VNNI`: AVX2 without AVX-VNNI,
/// AVX-512 without VNNI, which take the AVX2 panels), and with the AMX panels where the CPU
/// has them (`FORCE_AMX`): every type, every ISA, a ragged panel count (37 weight rows), row
/// counts below and above the panels' thresholds (40: two AMX tiles and 8 rows on the VNNI
/// panel), one and two threads, with a bias: the scalar reference's bits. (Other tests running meanwhile may
/// see `NO_VNNI` set: it changes their speed, not their bits.)
#[test]
fn every_panel_path_through_the_driver_gives_the_reference_bits() {
    use crate::{matmul_nt_on, Isa, Weights};
    use std::sync::atomic::Ordering;
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .into_iter()
        .map(|t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        })
        .collect();
    // (no VNNI, AMX): and the AMX panels where the CPU has them.
    let mut variants = vec![(false, false), (true, false)];
    #[cfg(target_arch = "x86_64")]
    if super::amx::supported() {
        variants.push((false, true));
    }
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    for ty in QuantType::ALL {
        let (n, k) = (37, if ty.is_k() { 768 } else { 288 });
        let wf: Vec<f32> = (0..n * k).map(|_| rng.unit()).collect();
        let w = Weights::quantize_f32(&wf, ty, n, k).unwrap();
        let bias: Vec<f32> = (0..n).map(|_| rng.unit()).collect();
        for m in [1, 2, 4, 9, 40] {
            let x: Vec<f32> = (0..m * k).map(|_| rng.unit() * 2.0).collect();
            let mut want = vec![0f32; m * n];
            matmul_nt_on(Isa::Scalar, &x, m, &w.view(), Some(&bias), &mut want);
            for isa in Isa::available() {
                for &(no_vnni, amx) in &variants {
                    for pool in &pools {
                        super::dot::NO_VNNI.store(no_vnni, Ordering::Relaxed);
                        #[cfg(target_arch = "x86_64")]
                        super::amx::FORCE_AMX.store(amx, Ordering::Relaxed);
                        let mut got = vec![0f32; m * n];
                        pool.install(|| matmul_nt_on(isa, &x, m, &w.view(), Some(&bias), &mut got));
                        super::dot::NO_VNNI.store(false, Ordering::Relaxed);
                        #[cfg(target_arch = "x86_64")]
                        super::amx::FORCE_AMX.store(false, Ordering::Relaxed);
                        assert!(
                            got.iter()
                                .zip(&want)
                                .all(|(a, b)| a.to_bits() == b.to_bits()),
                            "{ty} {isa:?} no_vnni {no_vnni} amx {amx} m {m} {} threads",
                            pool.current_num_threads()
                        );
                    }
                }
            }
        }
    }
}

/// The reference is the block formula summed in `sum_blocks`' order: recomputed here from the
/// dequantized weight levels.
#[test]
fn reference_is_the_documented_formula() {
    let mut rng = Rng(42);
    for ty in LEGACY {
        let blocks = 11;
        let w = weight_row(ty, blocks, &mut rng, 0.5);
        let x: Vec<f32> = (0..blocks * 32).map(|_| rng.unit()).collect();
        let act = Act::new(crate::Isa::best(), &x, 1, blocks * 32);
        let a = act.row(0);
        let mut contributions = Vec::new();
        for b in 0..blocks {
            let (q, dw, mw) = super::blocks::unpack(ty, &w[b * ty.block_bytes()..]);
            let sumi: i32 = (0..32).map(|i| q[i] * i32::from(a.q(b, i))).sum();
            let p = dw * a.d_of(b);
            contributions.push(match ty {
                QuantType::Q4_1 | QuantType::Q5_1 => p.mul_add(sumi as f32, mw * a.s_of(b)),
                _ => p * sumi as f32,
            });
        }
        let want = super::sum_blocks(contributions);
        assert_eq!(reference(ty, &w, a).to_bits(), want.to_bits(), "{ty}");
        // And it approximates the float dot product of the dequantized weights.
        let mut deq = vec![0f32; blocks * 32];
        super::dequantize_row(ty, &w, &mut deq);
        let exact: f64 = deq
            .iter()
            .zip(&x)
            .map(|(&a, &b)| f64::from(a) * f64::from(b))
            .sum();
        let scale: f64 = deq
            .iter()
            .zip(&x)
            .map(|(&a, &b)| (f64::from(a) * f64::from(b)).abs())
            .sum();
        assert!(
            (f64::from(want) - exact).abs() <= 0.02 * scale + 1e-6,
            "{ty}: {want} vs {exact}"
        );
    }
}

/// Single-thread speed of each kernel on a `[1536, 576]` weight (prints ns per block; run
/// with `cargo test --release -p sieve-kernels --lib quant::tests::speed -- --ignored
/// --nocapture`).
#[test]
#[ignore = "a timing, not a test"]
fn speed() {
    let mut rng = Rng(5);
    for (ty, n, k) in LEGACY
        .iter()
        .flat_map(|&t| [(t, 1536, 576), (t, 576, 1536)])
    {
        let w = weight_row(ty, n * k / 32, &mut rng, 1.0);
        let x: Vec<f32> = (0..4 * k).map(|_| rng.unit()).collect();
        let act = Act::new(crate::Isa::best(), &x, 4, k);
        let rows: Vec<ActRow<'_>> = (0..4).map(|r| act.row(r)).collect();
        let rb = ty.row_bytes(k).unwrap();
        for kernel in Kernel::available().into_iter().skip(1) {
            for tile in [1, 4] {
                let mut out = [0f32; 4];
                let mut best = f64::MAX;
                for _ in 0..200 {
                    let t = std::time::Instant::now();
                    for j in 0..n {
                        dot_rows(
                            kernel,
                            ty,
                            &w[j * rb..(j + 1) * rb],
                            &rows[..tile],
                            &mut out[..tile],
                        );
                    }
                    best = best.min(t.elapsed().as_secs_f64());
                    std::hint::black_box(&out);
                }
                let blocks = (n * k / 32 * tile) as f64;
                eprintln!(
                    "{ty} k {k} {kernel:?} rows {tile}: {:.2} ns/block-row, {:.1} GB/s of weights",
                    best * 1e9 / blocks,
                    (n * rb) as f64 / best / 1e9
                );
            }
        }
    }
}

/// This thread's time on a CPU so far, in ns (Linux; 0 elsewhere): timings on a shared
/// machine that do not count the waits for a core.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `matmul_nt`'s speed (1 and 2 threads; wall time, best of several, and the mean CPU time
/// of the calling thread) at SmolLM2-135M's shapes — `[1536, 576]` for the legacy types, `[576, 1536]`
/// for the K-quants — decode (1 row) and prefill (256 rows), on the tile kernels and on the
/// panel kernels, beside bf16.
#[test]
#[ignore = "a timing, not a test"]
fn speed_matmul() {
    use std::sync::atomic::Ordering;
    let tiles_only = &super::product::TILES_ONLY;
    let pools: Vec<rayon::ThreadPool> = [1, 2]
        .map(|t| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        })
        .into_iter()
        .collect();
    let types = [
        QuantType::Q4_0,
        QuantType::Q8_0,
        QuantType::Q5_0,
        QuantType::Q4_1,
        QuantType::Q2K,
        QuantType::Q3K,
        QuantType::Q4K,
        QuantType::Q5K,
        QuantType::Q6K,
    ];
    for (n, k) in [(1536, 576), (576, 1536)] {
        let x: Vec<f32> = (0..256 * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let wf: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.013).cos()).collect();
        let bf: Vec<u8> = wf
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        let bview = crate::WeightView::new(&bf, crate::Dtype::Bf16, n, k).unwrap();
        let quants: Vec<(QuantType, crate::Weights)> = types
            .iter()
            .filter(|t| k % t.block_len() == 0 && (t.is_k() == (k == 1536)))
            .map(|&t| (t, crate::Weights::quantize_f32(&wf, t, n, k).unwrap()))
            .collect();
        for m in [1, 2, 4, 256] {
            let mut runs = vec![("bf16".to_string(), bview, false)];
            for (t, q) in &quants {
                runs.push((format!("{t} tiles"), q.view(), true));
                if m > 1 {
                    runs.push((format!("{t} panel"), q.view(), false));
                }
            }
            for ((name, view, tiles), pool) in runs
                .into_iter()
                .flat_map(|r| pools.iter().map(move |p| (r.clone(), p)))
            {
                tiles_only.store(tiles, Ordering::Relaxed);
                let threads = pool.current_num_threads();
                let mut out = vec![0f32; m * n];
                let mut best = f64::MAX;
                let reps = (2000 / m).max(20);
                let cpu = pool.install(|| {
                    let c = cpu_ns();
                    for _ in 0..reps {
                        let t = std::time::Instant::now();
                        crate::matmul_nt(&x[..m * k], m, &view, None, &mut out);
                        best = best.min(t.elapsed().as_secs_f64());
                    }
                    (cpu_ns() - c) as f64 / reps as f64
                });
                eprintln!(
                    "[{n}, {k}] m {m} {name} {threads} threads: best {:.1} us, cpu {:.1} us",
                    best * 1e6,
                    cpu * 1e-3
                );
            }
        }
    }
    tiles_only.store(false, Ordering::Relaxed);
}

/// `matmul_nt_on` at 256 rows on one thread, by instruction set and kernel: AVX2 tiles and
/// panels (without and with AVX-VNNI), AVX-512 panels (and with AMX-INT8 tiles where the CPU
/// has them), for Q4_0 and Q8_0 at `[1536, 576]`,
/// Q4_K and Q6_K at `[576, 1536]` (`SPEED_ROWS` rows instead when set). The runs alternate;
/// each line is the median of `REPS`
/// (run with `cargo test --release -p sieve-kernels --lib quant::tests::speed_panels --
/// --ignored --nocapture`).
#[test]
#[ignore = "a timing, not a test"]
fn speed_panels_by_isa() {
    use crate::Isa;
    use std::sync::atomic::Ordering;
    const REPS: usize = 51;
    // `SPEED_ROWS=4` times 4 rows instead.
    let m: usize = std::env::var("SPEED_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    // (name, isa, AVX-VNNI allowed, tiles only, AMX allowed)
    let mut kernels = vec![];
    if crate::Isa::Avx2.is_available() {
        kernels.push(("avx2 tiles", Isa::Avx2, false, true, false));
        kernels.push(("avx2 panel", Isa::Avx2, false, false, false));
        if std::arch::is_x86_feature_detected!("avxvnni") {
            kernels.push(("avx-vnni tiles", Isa::Avx2, true, true, false));
            kernels.push(("avx-vnni panel", Isa::Avx2, true, false, false));
        }
    }
    if crate::Isa::Avx512.is_available() {
        kernels.push(("avx512 no-vnni tiles", Isa::Avx512, false, true, false));
        kernels.push((
            "avx512 no-vnni panel (avx2)",
            Isa::Avx512,
            false,
            false,
            false,
        ));
        kernels.push(("avx512 panel", Isa::Avx512, true, false, false));
        if super::amx::supported() {
            kernels.push(("avx512 panel + amx tiles", Isa::Avx512, true, false, true));
        }
    }
    for (ty, n, k) in [
        (QuantType::Q4_0, 1536, 576),
        (QuantType::Q8_0, 1536, 576),
        (QuantType::Q4K, 576, 1536),
        (QuantType::Q6K, 576, 1536),
    ] {
        let x: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let wf: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.013).cos()).collect();
        let w = crate::Weights::quantize_f32(&wf, ty, n, k).unwrap();
        let view = w.view();
        let mut times = vec![Vec::new(); kernels.len()];
        let mut first: Option<Vec<f32>> = None;
        for _ in 0..REPS {
            for (i, &(_, isa, vnni, tiles, amx)) in kernels.iter().enumerate() {
                super::dot::NO_VNNI.store(!vnni, Ordering::Relaxed);
                super::product::TILES_ONLY.store(tiles, Ordering::Relaxed);
                super::amx::FORCE_AMX.store(amx, Ordering::Relaxed);
                let mut out = vec![0f32; m * n];
                let t = std::time::Instant::now();
                pool.install(|| crate::matmul_nt_on(isa, &x, m, &view, None, &mut out));
                times[i].push(t.elapsed().as_secs_f64());
                let bits: Vec<f32> = out;
                match &first {
                    None => first = Some(bits),
                    Some(f) => {
                        assert!(f.iter().zip(&bits).all(|(a, b)| a.to_bits() == b.to_bits()))
                    }
                }
            }
        }
        super::dot::NO_VNNI.store(false, Ordering::Relaxed);
        super::product::TILES_ONLY.store(false, Ordering::Relaxed);
        super::amx::FORCE_AMX.store(false, Ordering::Relaxed);
        for ((name, ..), t) in kernels.iter().zip(&mut times) {
            t.sort_by(f64::total_cmp);
            eprintln!(
                "{ty} [{n}, {k}] m {m} 1 thread {name}: median {:.3} ms (min {:.3})",
                t[REPS / 2] * 1e3,
                t[0] * 1e3
            );
        }
    }
}

/// How long quantizing 256 activation rows of 576 takes, on each ISA's quantizer (best of
/// 20, the ISAs alternating).
#[test]
#[ignore = "a timing, not a test"]
fn speed_act() {
    let x: Vec<f32> = (0..256 * 576).map(|i| (i as f32 * 0.37).sin()).collect();
    let isas = crate::Isa::available();
    let mut best = vec![f64::MAX; isas.len()];
    for _ in 0..20 {
        for (b, &isa) in best.iter_mut().zip(&isas) {
            let t = std::time::Instant::now();
            std::hint::black_box(Act::new(isa, &x, 256, 576));
            *b = b.min(t.elapsed().as_secs_f64());
        }
    }
    for (b, isa) in best.iter().zip(&isas) {
        eprintln!("act 256x576 {isa:?}: {:.1} us", b * 1e6);
    }
}
