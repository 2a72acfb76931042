//! Q4_K: 4-bit weights in super-blocks of 256, 8 sub-blocks of 32 with a 6-bit scale and a
//! 6-bit min each (144 bytes, 4.5 bits per weight).
//!
//! Layout (GGML's `block_q4_K`): `f16 d` · `f16 dmin` · `u8 scales[12]` (8 scales and 8 mins,
//! see [`unpack_scale_min_k4`]) · `u8 qs[128]`. Element `e`'s level is the low nibble
//! (`e % 64 < 32`) or the high nibble of `qs[32·(e / 64) + e % 32]`, its sub-block is `e / 32`,
//! and `x = (d · sc) · q − (dmin · m)`.
//!
//! Dot product with a Q8_K block `a`: `isum = Σ_s sc_s · Σ_{e∈s} q_e · a_e`,
//! `msum = Σ_s m_s · (bsums_{2s} + bsums_{2s+1})` (exact `i32`), then
//! `c = (a.d · d) · isum − (a.d · dmin) · msum` in `f32`, each product rounded (no fma).

use super::common::{
    contribution_min, f16_at, f16_bytes, nearest_int, pack_scale_min_k4, unpack_scale_min_k4, QK_K,
};
use super::q8k::BlockQ8K;
use super::search::{make_qkx2_quants, Qkx2};

/// Bytes per block.
pub(crate) const BYTES: usize = 144;
/// Offset of `scales`.
pub(crate) const SCALES: usize = 4;
/// Offset of `qs`.
pub(crate) const QS: usize = 16;

/// The block's 12 scale bytes.
#[inline(always)]
pub(crate) fn scale_bytes(b: &[u8]) -> &[u8; 12] {
    b[SCALES..SCALES + 12].try_into().unwrap_or(&[0; 12])
}

/// The 4-bit level of element `e`.
#[inline(always)]
fn level(b: &[u8; BYTES], e: usize) -> u8 {
    (b[QS + 32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 0xf
}

/// Dequantizes one block (`dequantize_row_q4_K`, bit for bit).
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

/// Sub-block scales and mins fitted for a 4- or 5-bit K-quant (`nmax` 15 or 31), then the
/// block's 6-bit scales, `d`, `dmin` and each element's level, as
/// `quantize_row_q4_K_ref` / `quantize_row_q5_K_ref` compute them. Writes `d`, `dmin` and the
/// 12 scale bytes into `head` (the first 16 bytes of the block) and returns the levels.
pub(crate) fn fit_levels(x: &[f32; QK_K], search: &Qkx2, head: &mut [u8; 16]) -> [u8; QK_K] {
    let mut levels = [0u8; QK_K];
    let mut aux = [0u8; 32];
    let mut weights = [0f32; 32];
    let mut scales = [0f32; 8];
    let mut mins = [0f32; 8];
    let (mut max_scale, mut max_min) = (0f32, 0f32);
    for j in 0..8 {
        let xs = &x[32 * j..32 * j + 32];
        let mut sum_x2 = 0f32;
        for v in xs {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        for (w, v) in weights.iter_mut().zip(xs) {
            *w = av_x + v.abs();
        }
        let (scale, min) = make_qkx2_quants(
            search,
            xs,
            &weights,
            &mut levels[32 * j..32 * j + 32],
            &mut aux,
        );
        scales[j] = scale;
        mins[j] = min;
        if scale > max_scale {
            max_scale = scale;
        }
        if min > max_min {
            max_min = min;
        }
    }
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let mut ls = [0u8; 8];
    let mut lm = [0u8; 8];
    for j in 0..8 {
        ls[j] = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        lm[j] = (nearest_int(inv_min * mins[j]) as u8).min(63);
    }
    head[0..2].copy_from_slice(&f16_bytes(max_scale / 63.0));
    head[2..4].copy_from_slice(&f16_bytes(max_min / 63.0));
    head[4..16].copy_from_slice(&pack_scale_min_k4(&ls, &lm));
    let d_all = f16_at(head, 0);
    let m_all = f16_at(head, 2);
    let nmax = search.nmax;
    for j in 0..8 {
        let d = d_all * ls[j] as f32;
        if d == 0.0 {
            continue;
        }
        let dm = m_all * lm[j] as f32;
        for ii in 0..32 {
            let l = nearest_int((x[32 * j + ii] + dm) / d).clamp(0, nmax);
            levels[32 * j + ii] = l as u8;
        }
    }
    levels
}

/// Quantizes one block as `quantize_row_q4_K_ref` does.
pub(crate) fn quantize(x: &[f32; QK_K], out: &mut [u8; BYTES]) {
    let search = Qkx2 {
        nmax: 15,
        rmin: -1.0,
        rdelta: 0.1,
        nstep: 20,
        use_mad: false,
    };
    let mut head = [0u8; 16];
    let levels = fit_levels(x, &search, &mut head);
    out[..16].copy_from_slice(&head);
    for c in 0..4 {
        for l in 0..32 {
            out[QS + 32 * c + l] = levels[64 * c + l] | (levels[64 * c + 32 + l] << 4);
        }
    }
}

/// `Σ_s m_s · (bsums_{2s} + bsums_{2s+1})`: the mins' share of a Q4_K / Q5_K dot product.
#[inline(always)]
pub(crate) fn min_sum(m: &[u8; 8], a: &BlockQ8K) -> i32 {
    (0..8)
        .map(|s| m[s] as i32 * (a.bsums[2 * s] as i32 + a.bsums[2 * s + 1] as i32))
        .sum()
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
