//! Q2_K: 2-bit weights in super-blocks of 256, 16 sub-blocks of 16 with a 4-bit scale and a
//! 4-bit min each (84 bytes, 2.625 bits per weight).
//!
//! Layout (GGML's `block_q2_K`): `u8 scales[16]` (low nibble: scale, high nibble: min) ·
//! `u8 qs[64]` · `f16 d` · `f16 dmin`. Element `e`'s level is bits `2·((e % 128) / 32)..` of
//! `qs[32·(e / 128) + e % 32]`, its sub-block is `e / 16`, and
//! `x = (d · sc) · q − (dmin · m)`.
//!
//! Dot product with a Q8_K block `a` (the formula every path reproduces):
//! `isum = Σ_s sc_s · Σ_{e∈s} q_e · a_e`, `msum = Σ_s m_s · bsums_s` (exact `i32`), then
//! `c = (a.d · d) · isum − (a.d · dmin) · msum` in `f32`, each product rounded (no fma).

use super::common::{contribution_min, f16_at, f16_bytes, nearest_int, QK_K};
use super::q8k::BlockQ8K;
use super::search::{make_qkx2_quants, Qkx2};

/// Bytes per block.
pub(crate) const BYTES: usize = 84;
/// Offset of `qs`.
pub(crate) const QS: usize = 16;
/// Offset of `d` (then `dmin`).
pub(crate) const D: usize = 80;

/// The 2-bit level of element `e`.
#[inline(always)]
fn level(b: &[u8; BYTES], e: usize) -> u8 {
    (b[QS + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3
}

/// Dequantizes one block (`dequantize_row_q2_K`, bit for bit).
pub(crate) fn dequantize(b: &[u8; BYTES], y: &mut [f32; QK_K]) {
    let d = f16_at(b, D);
    let min = f16_at(b, D + 2);
    for (e, out) in y.iter_mut().enumerate() {
        let sc = b[e / 16];
        let dl = d * (sc & 0xf) as f32;
        let ml = min * (sc >> 4) as f32;
        *out = dl * level(b, e) as f32 - ml;
    }
}

/// Quantizes one block as `quantize_row_q2_K_ref` does.
pub(crate) fn quantize(x: &[f32; QK_K], out: &mut [u8; BYTES]) {
    let search = Qkx2 {
        nmax: 3,
        rmin: -0.5,
        rdelta: 0.1,
        nstep: 15,
        use_mad: true,
    };
    let mut levels = [0u8; QK_K];
    let mut aux = [0u8; 16];
    let mut weights = [0f32; 16];
    let mut scales = [0f32; 16];
    let mut mins = [0f32; 16];
    let (mut max_scale, mut max_min) = (0f32, 0f32);
    for j in 0..16 {
        let xs = &x[16 * j..16 * j + 16];
        for (w, v) in weights.iter_mut().zip(xs) {
            *w = v.abs();
        }
        let (scale, min) = make_qkx2_quants(
            &search,
            xs,
            &weights,
            &mut levels[16 * j..16 * j + 16],
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
    out.fill(0);
    let q4scale = 15f32;
    if max_scale > 0.0 {
        let iscale = q4scale / max_scale;
        for j in 0..16 {
            out[j] = nearest_int(iscale * scales[j]) as u8;
        }
        out[D..D + 2].copy_from_slice(&f16_bytes(max_scale / q4scale));
    }
    if max_min > 0.0 {
        let iscale = q4scale / max_min;
        for j in 0..16 {
            out[j] |= nearest_int(iscale * mins[j]).wrapping_shl(4) as u8;
        }
        out[D + 2..D + 4].copy_from_slice(&f16_bytes(max_min / q4scale));
    }
    let d_all = f16_at(out, D);
    let m_all = f16_at(out, D + 2);
    for j in 0..16 {
        let d = d_all * (out[j] & 0xf) as f32;
        if d == 0.0 {
            continue;
        }
        let dm = m_all * (out[j] >> 4) as f32;
        for ii in 0..16 {
            let l = nearest_int((x[16 * j + ii] + dm) / d).clamp(0, 3);
            levels[16 * j + ii] = l as u8;
        }
    }
    for half in 0..2 {
        let l0 = &levels[128 * half..];
        for l in 0..32 {
            out[QS + 32 * half + l] =
                l0[l] | (l0[l + 32] << 2) | (l0[l + 64] << 4) | (l0[l + 96] << 6);
        }
    }
}

/// The reference dot product of one block with a Q8_K block.
pub(crate) fn dot(b: &[u8; BYTES], a: &BlockQ8K) -> f32 {
    let mut isum = 0i32;
    let mut msum = 0i32;
    for s in 0..16 {
        let sc = b[s];
        let sub: i32 = (16 * s..16 * s + 16)
            .map(|e| level(b, e) as i32 * a.qs[e] as i32)
            .sum();
        isum += (sc & 0xf) as i32 * sub;
        msum += (sc >> 4) as i32 * a.bsums[s] as i32;
    }
    contribution_min(f16_at(b, D), f16_at(b, D + 2), a.d, isum, msum)
}
