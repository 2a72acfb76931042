//! Q3_K: 3-bit weights in super-blocks of 256, 16 sub-blocks of 16 with a signed 6-bit scale
//! each (110 bytes, 3.4375 bits per weight).
//!
//! Layout (GGML's `block_q3_K`): `u8 hmask[32]` · `u8 qs[64]` · `u8 scales[12]` · `f16 d`.
//! Element `e`'s low 2 bits are bits `2·((e % 128) / 32)..` of `qs[32·(e / 128) + e % 32]`;
//! its level is `low − 4` unless bit `e / 32` of `hmask[e % 32]` is set (then `low`), so
//! `q ∈ −4..=3`; its sub-block is `e / 16` with scale `sc ∈ −32..=31`, and `x = (d · sc) · q`.
//!
//! Dot product with a Q8_K block `a`: `isum = Σ_s sc_s · Σ_{e∈s} q_e · a_e` (exact `i32`),
//! then `c = (a.d · d) · isum` in `f32`.

use super::common::{
    contribution, f16_at, f16_bytes, nearest_int, pack_scales_q3k, unpack_scales_q3k, QK_K,
};
use super::q8k::BlockQ8K;
use super::search::make_q3_quants;

/// Bytes per block.
pub(crate) const BYTES: usize = 110;
/// Offset of `qs`.
pub(crate) const QS: usize = 32;
/// Offset of `scales`.
pub(crate) const SCALES: usize = 96;
/// Offset of `d`.
pub(crate) const D: usize = 108;

/// The block's 12 scale bytes.
#[inline(always)]
pub(crate) fn scale_bytes(b: &[u8; BYTES]) -> &[u8; 12] {
    b[SCALES..SCALES + 12].try_into().unwrap_or(&[0; 12])
}

/// The signed level (`−4..=3`) of element `e`.
#[inline(always)]
fn level(b: &[u8; BYTES], e: usize) -> i32 {
    let low = (b[QS + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    let high = (b[e % 32] >> (e / 32)) & 1;
    low as i32 - if high == 0 { 4 } else { 0 }
}

/// Dequantizes one block (`dequantize_row_q3_K`, bit for bit).
pub(crate) fn dequantize(b: &[u8; BYTES], y: &mut [f32; QK_K]) {
    let d_all = f16_at(b, D);
    let scales = unpack_scales_q3k(scale_bytes(b));
    for (e, out) in y.iter_mut().enumerate() {
        let dl = d_all * scales[e / 16] as f32;
        *out = dl * level(b, e) as f32;
    }
}

/// Quantizes one block as `quantize_row_q3_K_ref` does.
pub(crate) fn quantize(x: &[f32; QK_K], out: &mut [u8; BYTES]) {
    let mut levels = [0i8; QK_K];
    let mut scales = [0f32; 16];
    let (mut max_scale, mut amax) = (0f32, 0f32);
    for j in 0..16 {
        scales[j] = make_q3_quants(4, &x[16 * j..16 * j + 16], &mut levels[16 * j..16 * j + 16]);
        let scale = scales[j].abs();
        if scale > amax {
            amax = scale;
            max_scale = scales[j];
        }
    }
    out.fill(0);
    if max_scale != 0.0 {
        let iscale = -32.0 / max_scale;
        let mut biased = [0u8; 16];
        for j in 0..16 {
            let l = nearest_int(iscale * scales[j]) as i8;
            biased[j] = (l.clamp(-32, 31) + 32) as u8;
        }
        out[SCALES..SCALES + 12].copy_from_slice(&pack_scales_q3k(&biased));
        out[D..D + 2].copy_from_slice(&f16_bytes(1.0 / iscale));
    }
    let d_all = f16_at(out, D);
    let sc = unpack_scales_q3k(scale_bytes(out));
    for j in 0..16 {
        let d = d_all * sc[j] as f32;
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let l = nearest_int(x[16 * j + ii] / d).clamp(-4, 3);
            levels[16 * j + ii] = (l + 4) as i8;
        }
    }
    for (j, l) in levels.iter_mut().enumerate() {
        if *l > 3 {
            out[j % 32] |= 1 << (j / 32);
            *l -= 4;
        }
    }
    for half in 0..2 {
        let l0 = &levels[128 * half..];
        for l in 0..32 {
            out[QS + 32 * half + l] =
                (l0[l] | (l0[l + 32] << 2) | (l0[l + 64] << 4) | (l0[l + 96] << 6)) as u8;
        }
    }
}

/// The reference dot product of one block with a Q8_K block.
pub(crate) fn dot(b: &[u8; BYTES], a: &BlockQ8K) -> f32 {
    let scales = unpack_scales_q3k(scale_bytes(b));
    let mut isum = 0i32;
    for (s, &sc) in scales.iter().enumerate() {
        let sub: i32 = (16 * s..16 * s + 16)
            .map(|e| level(b, e) * a.qs[e] as i32)
            .sum();
        isum += sc as i32 * sub;
    }
    contribution(f16_at(b, D), a.d, isum)
}
