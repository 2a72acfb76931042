//! Q5_K: 5-bit weights in super-blocks of 256, 8 sub-blocks of 32 with a 6-bit scale and a
//! 6-bit min each (176 bytes, 5.5 bits per weight).
//!
//! Layout (GGML's `block_q5_K`): `f16 d` · `f16 dmin` · `u8 scales[12]` (as Q4_K's) ·
//! `u8 qh[32]` · `u8 qs[128]`. Element `e`'s low 4 bits are Q4_K's nibble of
//! `qs[32·(e / 64) + e % 32]`, its fifth bit is bit `e / 32` of `qh[e % 32]`, its sub-block is
//! `e / 32`, and `x = (d · sc) · q − (dmin · m)`.
//!
//! Dot product with a Q8_K block: the same integer sums and formula as Q4_K's
//! (`common::contribution_min`).

use super::common::{contribution_min, f16_at, unpack_scale_min_k4, QK_K};
use super::q4k::{fit_levels, min_sum, scale_bytes};
use super::q8k::BlockQ8K;
use super::search::Qkx2;

/// Bytes per block.
pub(crate) const BYTES: usize = 176;
/// Offset of `qh`.
pub(crate) const QH: usize = 16;
/// Offset of `qs`.
pub(crate) const QS: usize = 48;

/// The 5-bit level of element `e`.
#[inline(always)]
fn level(b: &[u8; BYTES], e: usize) -> u8 {
    let low = (b[QS + 32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 0xf;
    let high = (b[QH + e % 32] >> (e / 32)) & 1;
    low | (high << 4)
}

/// Dequantizes one block (`dequantize_row_q5_K`, bit for bit).
pub(crate) fn dequantize(b: &[u8; BYTES], y: &mut [f32; QK_K]) {
    let d = f16_at(b, 0);
    let min = f16_at(b, 2);
    let (sc, m) = unpack_scale_min_k4(scale_bytes(b));
    for (e, out) in y.iter_mut().enumerate() {
        let d1 = d * sc[e / 32] as f32;
        let m1 = min * m[e / 32] as f32;
        *out = d1 * level(b, e) as f32 - m1;
    }
}

/// Quantizes one block as `quantize_row_q5_K_ref` does.
pub(crate) fn quantize(x: &[f32; QK_K], out: &mut [u8; BYTES]) {
    let search = Qkx2 {
        nmax: 31,
        rmin: -0.5,
        rdelta: 0.1,
        nstep: 15,
        use_mad: false,
    };
    let mut head = [0u8; 16];
    let levels = fit_levels(x, &search, &mut head);
    out.fill(0);
    out[..16].copy_from_slice(&head);
    for c in 0..4 {
        for j in 0..32 {
            let mut l1 = levels[64 * c + j];
            if l1 > 15 {
                l1 -= 16;
                out[QH + j] |= 1 << (2 * c);
            }
            let mut l2 = levels[64 * c + 32 + j];
            if l2 > 15 {
                l2 -= 16;
                out[QH + j] |= 2 << (2 * c);
            }
            out[QS + 32 * c + j] = l1 | (l2 << 4);
        }
    }
}

/// The reference dot product of one block with a Q8_K block.
pub(crate) fn dot(b: &[u8; BYTES], a: &BlockQ8K) -> f32 {
    let (sc, m) = unpack_scale_min_k4(scale_bytes(b));
    let mut isum = 0i32;
    for (s, &scale) in sc.iter().enumerate() {
        let sub: i32 = (32 * s..32 * s + 32)
            .map(|e| level(b, e) as i32 * a.qs[e] as i32)
            .sum();
        isum += scale as i32 * sub;
    }
    contribution_min(f16_at(b, 0), f16_at(b, 2), a.d, isum, min_sum(&m, a))
}
