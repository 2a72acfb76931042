//! Q6_K: 6-bit weights in super-blocks of 256, 16 sub-blocks of 16 with a signed 8-bit scale
//! each (210 bytes, 6.5625 bits per weight).
//!
//! Layout (GGML's `block_q6_K`): `u8 ql[128]` · `u8 qh[64]` · `i8 scales[16]` · `f16 d`. In
//! half `h = e / 128`, with `g = (e % 128) / 32` and `l = e % 32`, element `e`'s low 4 bits are
//! the low (`g < 2`) or high nibble of `ql[64·h + 32·(g % 2) + l]`, its top 2 bits are bits
//! `2·g..` of `qh[32·h + l]`, its level is that 6-bit value `− 32` (`q ∈ −32..=31`), its
//! sub-block is `e / 16`, and `x = (d · sc) · q`.
//!
//! Dot product with a Q8_K block `a`: `isum = Σ_s sc_s · Σ_{e∈s} q_e · a_e` (exact `i32`),
//! then `c = (a.d · d) · isum` in `f32`.

use super::common::{contribution, f16_at, f16_bytes, nearest_int, QK_K};
use super::q8k::BlockQ8K;
use super::search::{make_qx_quants, GROUP_MAX_EPS};

/// Bytes per block.
pub(crate) const BYTES: usize = 210;
/// Offset of `qh`.
pub(crate) const QH: usize = 128;
/// Offset of `scales`.
pub(crate) const SCALES: usize = 192;
/// Offset of `d`.
pub(crate) const D: usize = 208;

/// The signed level (`−32..=31`) of element `e`.
#[inline(always)]
fn level(b: &[u8; BYTES], e: usize) -> i32 {
    let (h, g, l) = (e / 128, (e % 128) / 32, e % 32);
    let low = (b[64 * h + 32 * (g % 2) + l] >> (4 * (g / 2))) & 0xf;
    let high = (b[QH + 32 * h + l] >> (2 * g)) & 3;
    (low | (high << 4)) as i32 - 32
}

/// Dequantizes one block (`dequantize_row_q6_K`, bit for bit).
pub(crate) fn dequantize(b: &[u8; BYTES], y: &mut [f32; QK_K]) {
    let d = f16_at(b, D);
    for (e, out) in y.iter_mut().enumerate() {
        let sc = b[SCALES + e / 16] as i8;
        *out = d * sc as f32 * level(b, e) as f32;
    }
}

/// Quantizes one block as `quantize_row_q6_K_ref` does.
pub(crate) fn quantize(x: &[f32; QK_K], out: &mut [u8; BYTES]) {
    let mut levels = [0i8; QK_K];
    let mut scales = [0f32; 16];
    let (mut max_scale, mut max_abs_scale) = (0f32, 0f32);
    for ib in 0..16 {
        let scale = make_qx_quants(
            32,
            &x[16 * ib..16 * ib + 16],
            &mut levels[16 * ib..16 * ib + 16],
        );
        scales[ib] = scale;
        let abs_scale = scale.abs();
        if abs_scale > max_abs_scale {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }
    out.fill(0);
    if max_abs_scale < GROUP_MAX_EPS {
        return;
    }
    let iscale = -128.0 / max_scale;
    out[D..D + 2].copy_from_slice(&f16_bytes(1.0 / iscale));
    for ib in 0..16 {
        out[SCALES + ib] = nearest_int(iscale * scales[ib]).min(127) as i8 as u8;
    }
    let d_all = f16_at(out, D);
    for j in 0..16 {
        let d = d_all * (out[SCALES + j] as i8) as f32;
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let l = nearest_int(x[16 * j + ii] / d).clamp(-32, 31);
            levels[16 * j + ii] = (l + 32) as i8;
        }
    }
    for h in 0..2 {
        let lv = &levels[128 * h..];
        for l in 0..32 {
            let q = |i: usize| lv[l + i] as u8;
            out[64 * h + l] = (q(0) & 0xf) | ((q(64) & 0xf) << 4);
            out[64 * h + 32 + l] = (q(32) & 0xf) | ((q(96) & 0xf) << 4);
            out[QH + 32 * h + l] =
                (q(0) >> 4) | ((q(32) >> 4) << 2) | ((q(64) >> 4) << 4) | ((q(96) >> 4) << 6);
        }
    }
}

/// The reference dot product of one block with a Q8_K block.
pub(crate) fn dot(b: &[u8; BYTES], a: &BlockQ8K) -> f32 {
    let mut isum = 0i32;
    for s in 0..16 {
        let sc = b[SCALES + s] as i8;
        let sub: i32 = (16 * s..16 * s + 16)
            .map(|e| level(b, e) * a.qs[e] as i32)
            .sum();
        isum += sc as i32 * sub;
    }
    contribution(f16_at(b, D), a.d, isum)
}
