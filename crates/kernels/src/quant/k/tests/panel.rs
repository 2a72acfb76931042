//! The prefill panel kernels (AVX-512 VNNI: 16 weight rows across the lanes; AVX2: 8) against
//! the scalar reference, bit for bit.

use super::*;

/// A panel kernel's fill and multiply: `(ty, w, count, blocks, acts, bias, out, n)` fills a
/// panel with the `count` rows of `blocks` super-blocks in `w` and writes the products of the
/// activation rows `acts` (whole rows) with them (plus `bias`) at `out` (rows `n` apart).
type PanelRun<'a> =
    &'a dyn Fn(QuantType, &[u8], usize, usize, &[BlockQ8K], Option<&[f32]>, *mut f32, usize);

/// Checks a panel kernel of `width` weight rows (`run`) against the scalar reference: every
/// K-quant, 1, 6 and 9 super-blocks a row (lane classes with one, none and two blocks),
/// panels of `counts` rows (lanes past them unwritten), 1 to 9 activation rows with edge
/// values (`-128` included), with and without a bias.
fn check_panel(name: &str, width: usize, counts: &[usize], run: PanelRun<'_>) {
    let mut rng = Rng(0x2468_ace1);
    for ty in TYPES {
        for nblocks in [1usize, 6, 9] {
            let rb = nblocks * ty.block_bytes();
            let m = 9;
            // Every 7th block all `-128` (each type's `vpmaddubsw` bound at its worst).
            let acts: Vec<BlockQ8K> = (0..m * nblocks)
                .map(|i| {
                    let mut a = random_act(&mut rng, i % 5 == 0);
                    if i % 7 == 3 {
                        a.qs = [-128; 256];
                        a.bsums = [-2048; 16];
                    }
                    a
                })
                .collect();
            for &count in counts {
                // Every third block at its top levels (all bytes 0xFF but the f16 scales).
                let w: Vec<u8> = (0..count * nblocks)
                    .flat_map(|i| extreme(ty, random_block(ty, &mut rng), i % 3 == 1))
                    .collect();
                let bias: Vec<f32> = (0..count).map(|_| rng.uniform() * 4.0).collect();
                for with_bias in [false, true] {
                    for rows in [1, 3, 4, 9] {
                        let n = width + 2;
                        let sentinel = f32::from_bits(0x7FC0_4321);
                        let mut out = vec![sentinel; m * n];
                        for r0 in (0..m).step_by(rows) {
                            let t = rows.min(m - r0);
                            // SAFETY: `out` holds `m` rows of `n ≥ count` columns.
                            let at = unsafe { out.as_mut_ptr().add(r0 * n) };
                            let a = &acts[r0 * nblocks..(r0 + t) * nblocks];
                            run(
                                ty,
                                &w,
                                count,
                                nblocks,
                                a,
                                with_bias.then_some(&bias[..]),
                                at,
                                n,
                            );
                        }
                        for r in 0..m {
                            let a = &acts[r * nblocks..(r + 1) * nblocks];
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
                                let mut want =
                                    dot_row_on(Path::Scalar, ty, &w[j * rb..(j + 1) * rb], a);
                                if with_bias {
                                    want += bias[j];
                                }
                                assert!(
                                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                                    "{name} {ty} {nblocks} blocks, {count} rows, tile {rows}, \
                                     bias {with_bias}: out[{r}][{j}] {g} vs {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `block` (of `ty`) with every byte but its `f16` scales set to 0xFF when `top`: the
/// largest levels every type has.
fn extreme(ty: QuantType, mut block: Vec<u8>, top: bool) -> Vec<u8> {
    if top {
        let scales = match ty {
            QuantType::Q2K => 80..84,
            QuantType::Q3K => 108..110,
            QuantType::Q4K | QuantType::Q5K => 0..4,
            _ => 208..210,
        };
        for (i, v) in block.iter_mut().enumerate() {
            if !scales.contains(&i) {
                *v = 0xFF;
            }
        }
    }
    block
}

/// The AVX-512 VNNI panel kernel (16 weight rows) gives the scalar reference's bits
/// (`check_panel`: panels of 16, 1 and 7 rows).
#[test]
fn panel_kernel_gives_the_reference_bits() {
    use super::super::panel::{fill, multiply, takes, Panel, PANEL};
    if !Path::available().contains(&Path::Avx512Vnni) {
        eprintln!("no AVX-512 VNNI: panel kernel not tested");
        return;
    }
    check_panel(
        "avx512",
        PANEL,
        &[16, 1, 7],
        &|ty, w, count, nb, acts, bias, out, n| {
            assert!(takes(ty, nb * ty.block_bytes()));
            let mut panel = Panel::new(ty, nb);
            // SAFETY: the CPU has AVX-512 VNNI (checked above); `w` holds `count` rows; `out`
            // holds the rows' `count` columns `n` apart (`check_panel`).
            unsafe {
                fill(ty, w, count, &mut panel);
                multiply(ty, &panel, acts, bias, out, n);
            }
        },
    );
}

/// The AVX2 panel kernel (8 weight rows; `vpmaddubsw` + `vpmaddwd`) gives the scalar
/// reference's bits (`check_panel`: panels of 1 to 8 rows).
#[test]
fn avx2_panel_kernel_gives_the_reference_bits() {
    use super::super::panel_avx2::{fill, multiply, takes, Panel, PANEL};
    if !Path::available().contains(&Path::Avx2) {
        eprintln!("no AVX2: AVX2 panel kernel not tested");
        return;
    }
    let counts: Vec<usize> = (1..=PANEL).rev().collect();
    check_panel(
        "avx2",
        PANEL,
        &counts,
        &|ty, w, count, nb, acts, bias, out, n| {
            assert!(takes(ty));
            let mut panel = Panel::new(ty, nb);
            // SAFETY: the CPU has AVX2 (checked above); `w` holds `count` rows; `out` holds the
            // rows' `count` columns `n` apart (`check_panel`).
            unsafe {
                fill(ty, w, count, &mut panel);
                multiply(ty, &panel, acts, bias, out, n);
            }
        },
    );
}
