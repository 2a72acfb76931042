//! Pieces every K-quant shares: the super-block length, `f16` fields, llama.cpp's rounding to
//! the nearest integer, and the 12-byte packing of 6-bit scales (and mins) that Q3_K, Q4_K and
//! Q5_K use.

use half::f16;

/// Elements per super-block (GGML's `QK_K`).
pub(crate) const QK_K: usize = 256;

/// The `f16` stored little-endian at `bytes[at..at + 2]`, widened (exactly) to `f32`.
#[inline(always)]
pub(crate) fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// The `f16` with bits `h`, widened exactly to `f32` (what F16C's `vcvtph2ps` gives, NaN
/// payloads aside), in plain integer code: no run-time feature check per call.
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    if exp == 0x1f {
        f32::from_bits(sign | 0x7f80_0000 | (man << 13))
    } else if exp != 0 {
        f32::from_bits(sign | ((exp + 112) << 23) | (man << 13))
    } else {
        // Zero or subnormal: man · 2⁻²⁴, exact.
        let v = man as f32 * (1.0 / 16_777_216.0);
        if sign != 0 {
            -v
        } else {
            v
        }
    }
}

/// A block's contribution for the types without mins (Q3_K, Q6_K):
/// `c = (a_d · d) · isum`, each product rounded to `f32`.
#[inline(always)]
pub(crate) fn contribution(d: f32, a_d: f32, isum: i32) -> f32 {
    (a_d * d) * isum as f32
}

/// A block's contribution for the types with mins (Q2_K, Q4_K, Q5_K):
/// `c = (a_d · d) · isum − (a_d · dmin) · msum`, each product rounded to `f32` (no fma).
#[inline(always)]
pub(crate) fn contribution_min(d: f32, dmin: f32, a_d: f32, isum: i32, msum: i32) -> f32 {
    (a_d * d) * isum as f32 - (a_d * dmin) * msum as f32
}

/// `v` rounded to the nearest `f16` (ties to even, as GGML's `GGML_FP32_TO_FP16`), as the two
/// little-endian bytes a block stores.
#[inline]
pub(crate) fn f16_bytes(v: f32) -> [u8; 2] {
    f16::from_f32(v).to_le_bytes()
}

/// llama.cpp's `nearest_int`: adds `1.5 · 2²³` so the float unit rounds to an integer (ties
/// to even) and reads the integer from the low mantissa bits.
///
/// Exact for `|v| ≤ 4 194 303`; outside that (or for NaN) it returns the same garbage
/// llama.cpp's release build does, never panicking, so quantized bytes match llama.cpp's even
/// on degenerate input.
#[inline(always)]
pub(crate) fn nearest_int(v: f32) -> i32 {
    let shifted = v + 12_582_912.0;
    ((shifted.to_bits() & 0x007f_ffff) as i32) - 0x0040_0000
}

/// The 8 scales and 8 mins of a Q4_K / Q5_K super-block, 6 bits each, unpacked from their 12
/// bytes (GGML's `get_scale_min_k4` for `j = 0..8`): sub-blocks 0..4 keep the low 6 bits of
/// bytes 0..4 (scales) and 4..8 (mins); sub-blocks 4..8 take their low 4 bits from the nibbles
/// of bytes 8..12 and their top 2 bits from the spare top bits of bytes 0..8.
#[inline(always)]
pub(crate) fn unpack_scale_min_k4(q: &[u8; 12]) -> ([u8; 8], [u8; 8]) {
    let a0 = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
    let a1 = u32::from_le_bytes([q[4], q[5], q[6], q[7]]);
    let a2 = u32::from_le_bytes([q[8], q[9], q[10], q[11]]);
    let sc_lo = a0 & 0x3f3f_3f3f;
    let m_lo = a1 & 0x3f3f_3f3f;
    let sc_hi = (a2 & 0x0f0f_0f0f) | ((a0 >> 2) & 0x3030_3030);
    let m_hi = ((a2 >> 4) & 0x0f0f_0f0f) | ((a1 >> 2) & 0x3030_3030);
    let mut sc = [0u8; 8];
    let mut m = [0u8; 8];
    sc[..4].copy_from_slice(&sc_lo.to_le_bytes());
    sc[4..].copy_from_slice(&sc_hi.to_le_bytes());
    m[..4].copy_from_slice(&m_lo.to_le_bytes());
    m[4..].copy_from_slice(&m_hi.to_le_bytes());
    (sc, m)
}

/// Packs 8 scales and 8 mins (each `< 64`) into 12 bytes, the inverse of
/// [`unpack_scale_min_k4`] (the layout `quantize_row_q4_K_ref` writes).
pub(crate) fn pack_scale_min_k4(sc: &[u8; 8], m: &[u8; 8]) -> [u8; 12] {
    let mut q = [0u8; 12];
    for j in 0..8 {
        let (ls, lm) = (sc[j] & 63, m[j] & 63);
        if j < 4 {
            q[j] = ls;
            q[j + 4] = lm;
        } else {
            q[j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
            q[j - 4] |= (ls >> 4) << 6;
            q[j] |= (lm >> 4) << 6;
        }
    }
    q
}

/// The 16 scales of a Q3_K super-block, 6 bits each (stored with a bias of 32), unpacked from
/// their 12 bytes: sub-block `j`'s low 4 bits are the low nibble of byte `j` (`j < 8`) or the
/// high nibble of byte `j − 8`, its top 2 bits are bits `2·(j / 4)..` of byte `8 + j % 4`.
/// Returns the signed scales (`stored − 32`, in `−32..=31`).
#[inline(always)]
pub(crate) fn unpack_scales_q3k(q: &[u8; 12]) -> [i8; 16] {
    let a0 = u32::from_le_bytes([q[0], q[1], q[2], q[3]]);
    let a1 = u32::from_le_bytes([q[4], q[5], q[6], q[7]]);
    let t = u32::from_le_bytes([q[8], q[9], q[10], q[11]]);
    const LOW4: u32 = 0x0f0f_0f0f;
    const LOW2: u32 = 0x0303_0303;
    let words = [
        (a0 & LOW4) | ((t & LOW2) << 4),
        (a1 & LOW4) | (((t >> 2) & LOW2) << 4),
        ((a0 >> 4) & LOW4) | (((t >> 4) & LOW2) << 4),
        ((a1 >> 4) & LOW4) | (((t >> 6) & LOW2) << 4),
    ];
    let mut out = [0i8; 16];
    for (w, word) in words.iter().enumerate() {
        for (b, byte) in word.to_le_bytes().iter().enumerate() {
            out[4 * w + b] = (*byte as i8).wrapping_sub(32);
        }
    }
    out
}

/// Packs 16 biased 6-bit Q3_K scales (each `< 64`, i.e. `scale + 32`) into 12 bytes, the
/// inverse of [`unpack_scales_q3k`] (the layout `quantize_row_q3_K_ref` writes).
pub(crate) fn pack_scales_q3k(biased: &[u8; 16]) -> [u8; 12] {
    let mut q = [0u8; 12];
    for (j, &l) in biased.iter().enumerate() {
        if j < 8 {
            q[j] = l & 0xf;
        } else {
            q[j - 8] |= (l & 0xf) << 4;
        }
        q[j % 4 + 8] |= (l >> 4) << (2 * (j / 4));
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_widening_is_exact_for_every_value() {
        for h in 0..=u16::MAX {
            let want = f16::from_bits(h).to_f32();
            let got = f16_to_f32(h);
            if want.is_nan() {
                assert!(got.is_nan(), "{h:#x}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{h:#x}");
            }
        }
    }

    #[test]
    fn nearest_int_rounds_ties_to_even() {
        for (v, want) in [
            (0.5f32, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (-2.4, -2),
            (3.7, 4),
            (127.0, 127),
            (-127.49, -127),
            (4_194_303.0, 4_194_303),
        ] {
            assert_eq!(nearest_int(v), want, "{v}");
        }
    }

    #[test]
    fn scale_packings_round_trip() {
        let mut state = 0x1234_5678u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        for _ in 0..200 {
            let sc: [u8; 8] = std::array::from_fn(|_| (next() % 64) as u8);
            let m: [u8; 8] = std::array::from_fn(|_| (next() % 64) as u8);
            let packed = pack_scale_min_k4(&sc, &m);
            assert_eq!(unpack_scale_min_k4(&packed), (sc, m));
            // GGML's get_scale_min_k4, written out per sub-block.
            for j in 0..8 {
                let (d, mm) = if j < 4 {
                    (packed[j] & 63, packed[j + 4] & 63)
                } else {
                    (
                        (packed[j + 4] & 0xf) | ((packed[j - 4] >> 6) << 4),
                        (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4),
                    )
                };
                assert_eq!((d, mm), (sc[j], m[j]));
            }
            let biased: [u8; 16] = std::array::from_fn(|_| (next() % 64) as u8);
            let packed = pack_scales_q3k(&biased);
            let signed = unpack_scales_q3k(&packed);
            for j in 0..16 {
                assert_eq!(signed[j] as i32, biased[j] as i32 - 32);
            }
        }
    }
}
