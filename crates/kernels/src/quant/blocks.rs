//! The legacy 32-element blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): their byte layout, exact
//! dequantization, and GGML's reference quantization (`quantize_row_*_ref` in
//! `ggml-quants.c`, rewritten here from its description) so a float checkpoint quantized by
//! sieve holds the same bytes as one quantized by llama.cpp.
//!
//! Layouts (little-endian, `f16` scales), 32 elements `x[0..32]` a block:
//!
//! | type | bytes | fields | element `i` |
//! |---|---|---|---|
//! | Q4_0 | 18 | `d, qs[16]` | `d · (q − 8)` |
//! | Q4_1 | 20 | `d, m, qs[16]` | `d · q + m` |
//! | Q5_0 | 22 | `d, qh[4], qs[16]` | `d · (q − 16)` |
//! | Q5_1 | 24 | `d, m, qh[4], qs[16]` | `d · q + m` |
//! | Q8_0 | 34 | `d, qs[32]` (`i8`) | `d · q` |
//!
//! The 4-bit part of element `i < 16` is the low nibble of `qs[i]`, of element `i + 16` the
//! high nibble of `qs[i]`; the fifth bit of element `i` is bit `i` of `qh` read as a
//! little-endian `u32`.

use crate::dtype::f16_to_f32;
use crate::quant::QuantType;

/// Elements per legacy block.
pub(crate) const QK: usize = 32;

/// The `f16` at `b[at..at + 2]`, widened (exact).
#[inline(always)]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// `v` rounded to the nearest `f16` (ties to even, as F16C's `vcvtps2ph` and GGML's
/// `GGML_FP32_TO_FP16` do), as little-endian bytes.
#[inline]
fn f16_bytes(v: f32) -> [u8; 2] {
    half::f16::from_f32(v).to_bits().to_le_bytes()
}

/// The unsigned quant of element `i` of a 4- or 5-bit block: `qs` its 16 nibble bytes, `qh`
/// its fifth bits (0 for 4-bit types).
#[inline(always)]
pub(crate) fn nibble(qs: &[u8], qh: u32, i: usize) -> u8 {
    let low = if i < 16 {
        qs[i] & 0x0F
    } else {
        qs[i - 16] >> 4
    };
    low | ((((qh >> i) & 1) as u8) << 4)
}

/// The integer quants `q[0..32]` of one block as the dot products use them (`q − 8` for Q4_0,
/// `q − 16` for Q5_0, unsigned `q` for Q4_1/Q5_1, `i8` for Q8_0), and its scale `d` and offset
/// `m` (0 for the symmetric types).
pub(crate) fn unpack(ty: QuantType, b: &[u8]) -> ([i32; QK], f32, f32) {
    let mut q = [0i32; QK];
    let d = f16_at(b, 0);
    let mut m = 0.0;
    match ty {
        QuantType::Q4_0 => {
            for (i, v) in q.iter_mut().enumerate() {
                *v = i32::from(nibble(&b[2..18], 0, i)) - 8;
            }
        }
        QuantType::Q4_1 => {
            m = f16_at(b, 2);
            for (i, v) in q.iter_mut().enumerate() {
                *v = i32::from(nibble(&b[4..20], 0, i));
            }
        }
        QuantType::Q5_0 => {
            let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
            for (i, v) in q.iter_mut().enumerate() {
                *v = i32::from(nibble(&b[6..22], qh, i)) - 16;
            }
        }
        QuantType::Q5_1 => {
            m = f16_at(b, 2);
            let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
            for (i, v) in q.iter_mut().enumerate() {
                *v = i32::from(nibble(&b[8..24], qh, i));
            }
        }
        QuantType::Q8_0 => {
            for (i, v) in q.iter_mut().enumerate() {
                *v = i32::from(b[2 + i] as i8);
            }
        }
        _ => unreachable!("unpack is only called for the legacy types"),
    }
    (q, d, m)
}

/// Dequantizes one block `b` of a legacy type into `out[0..32]`: `d · q (+ m)` in `f32`
/// (the product rounded, then the offset added: two roundings, no fused multiply-add).
pub(crate) fn dequantize_block(ty: QuantType, b: &[u8], out: &mut [f32]) {
    let (q, d, m) = unpack(ty, b);
    let offset = matches!(ty, QuantType::Q4_1 | QuantType::Q5_1);
    for (o, &q) in out.iter_mut().zip(&q) {
        *o = if offset {
            q as f32 * d + m
        } else {
            q as f32 * d
        };
    }
}

/// Quantizes the 32 finite values `x` into one block `out` (`ty.block_bytes()` bytes) with
/// GGML's reference rounding.
pub(crate) fn quantize_block(ty: QuantType, x: &[f32], out: &mut [u8]) {
    match ty {
        QuantType::Q4_0 | QuantType::Q5_0 => {
            // The value of largest magnitude (the first of equals) maps to the most negative
            // quant: d = max / −8 (−16).
            let (bits, half_range) = if ty == QuantType::Q4_0 {
                (4, 8.0)
            } else {
                (5, 16.0)
            };
            let (mut amax, mut max) = (0f32, 0f32);
            for &v in x {
                if amax < v.abs() {
                    amax = v.abs();
                    max = v;
                }
            }
            let d = max / -half_range;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            let top = (1u8 << bits) - 1;
            // `as i8` truncates toward zero (and saturates), as C's `(int8_t)` does in range.
            let q: Vec<u8> = x
                .iter()
                .map(|&v| ((v * id + (half_range + 0.5)) as i8 as u8).min(top))
                .collect();
            out[0..2].copy_from_slice(&f16_bytes(d));
            pack(&q, bits, &mut out[2..]);
        }
        QuantType::Q4_1 | QuantType::Q5_1 => {
            let bits = if ty == QuantType::Q4_1 { 4 } else { 5 };
            let (mut min, mut max) = (f32::MAX, -f32::MAX);
            for &v in x {
                if v < min {
                    min = v;
                }
                if v > max {
                    max = v;
                }
            }
            let d = (max - min) / f32::from((1u8 << bits) - 1);
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            let q: Vec<u8> = x
                .iter()
                .map(|&v| {
                    let q = ((v - min) * id + 0.5) as i8 as u8;
                    // GGML clamps Q4_1's quants to 15; Q5_1's keep only their five bits.
                    if bits == 4 {
                        q.min(15)
                    } else {
                        q & 31
                    }
                })
                .collect();
            out[0..2].copy_from_slice(&f16_bytes(d));
            out[2..4].copy_from_slice(&f16_bytes(min));
            pack(&q, bits, &mut out[4..]);
        }
        QuantType::Q8_0 => {
            let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
            let d = amax / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            out[0..2].copy_from_slice(&f16_bytes(d));
            for (o, &v) in out[2..34].iter_mut().zip(x) {
                // Round half away from zero, as C's `roundf`.
                *o = (v * id).round() as i8 as u8;
            }
        }
        _ => unreachable!("quantize_block is only called for the legacy types"),
    }
}

/// Packs 32 unsigned quants of `bits` (4 or 5) bits: for 5 bits the `qh` word first, then
/// the 16 nibble bytes.
fn pack(q: &[u8], bits: u32, out: &mut [u8]) {
    let qs = if bits == 5 {
        let qh = q
            .iter()
            .enumerate()
            .fold(0u32, |h, (i, &v)| h | (u32::from(v >> 4 & 1) << i));
        out[0..4].copy_from_slice(&qh.to_le_bytes());
        &mut out[4..20]
    } else {
        &mut out[0..16]
    };
    for j in 0..16 {
        qs[j] = (q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEGACY: [QuantType; 5] = [
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q5_0,
        QuantType::Q5_1,
        QuantType::Q8_0,
    ];

    /// A hand-built Q4_0 block: scale 0.5, nibbles 0..15 then 15..0.
    #[test]
    fn q4_0_layout_low_nibbles_first() {
        let mut b = vec![0u8; 18];
        b[0..2].copy_from_slice(&half::f16::from_f32(0.5).to_bits().to_le_bytes());
        for j in 0..16 {
            b[2 + j] = (j as u8) | ((15 - j as u8) << 4);
        }
        let mut out = [0f32; 32];
        dequantize_block(QuantType::Q4_0, &b, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], 0.5 * (j as f32 - 8.0));
            assert_eq!(out[j + 16], 0.5 * (7.0 - j as f32));
        }
    }

    /// Q5_1's fifth bits come from `qh` bit `i`.
    #[test]
    fn q5_1_fifth_bit() {
        let mut b = vec![0u8; 24];
        b[0..2].copy_from_slice(&half::f16::from_f32(1.0).to_bits().to_le_bytes());
        b[2..4].copy_from_slice(&half::f16::from_f32(-2.0).to_bits().to_le_bytes());
        b[4..8].copy_from_slice(&(1u32 << 3 | 1 << 20).to_le_bytes());
        b[8 + 3] = 0x02;
        b[8 + 4] = 0x50;
        let mut out = [0f32; 32];
        dequantize_block(QuantType::Q5_1, &b, &mut out);
        assert_eq!(out[3], 16.0 + 2.0 - 2.0);
        assert_eq!(out[20], 16.0 + 5.0 - 2.0);
        assert_eq!(out[0], -2.0);
    }

    /// Quantizing then dequantizing stays within half a step (plus the f16 rounding of the
    /// scale) of every value, and a block already on the grid comes back exactly.
    #[test]
    fn round_trip_error_is_bounded() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) * 2.0 - 1.0
        };
        for ty in LEGACY {
            for scale in [1e-3f32, 1.0, 300.0] {
                let x: Vec<f32> = (0..32).map(|_| next() * scale).collect();
                let mut b = vec![0u8; ty.block_bytes()];
                quantize_block(ty, &x, &mut b);
                let mut y = [0f32; 32];
                dequantize_block(ty, &b, &mut y);
                let amax = x.iter().fold(0f32, |a, v| a.max(v.abs()));
                let lo = x.iter().fold(f32::MAX, |a, &v| a.min(v));
                let hi = x.iter().fold(-f32::MAX, |a, &v| a.max(v));
                // Half a step; a whole one for Q4_0/Q5_0, whose top quant (7 or 15 steps
                // above zero) clamps a value of the opposite sign to the extreme.
                let error = match ty {
                    QuantType::Q4_0 => amax / 8.0,
                    QuantType::Q5_0 => amax / 16.0,
                    QuantType::Q8_0 => amax / 127.0 * 0.5,
                    QuantType::Q4_1 => (hi - lo) / 15.0 * 0.5,
                    _ => (hi - lo) / 31.0 * 0.5,
                };
                for (a, b) in x.iter().zip(&y) {
                    assert!((a - b).abs() <= error * 1.01 + amax * 2e-3, "{ty}: {a} {b}");
                }
            }
            let zero = [0f32; 32];
            let mut b = vec![0u8; ty.block_bytes()];
            quantize_block(ty, &zero, &mut b);
            let mut y = [1f32; 32];
            dequantize_block(ty, &b, &mut y);
            assert_eq!(y, zero, "{ty}");
        }
    }

    /// Values from GGML's formulas worked by hand: Q4_0 of a ramp.
    #[test]
    fn q4_0_reference_rounding() {
        // max = -8 (largest magnitude) -> d = 1, id = 1: q = trunc(x + 8.5) clamped to 15.
        let mut x = [0f32; 32];
        x[0] = -8.0;
        x[1] = 7.4;
        x[2] = 7.6;
        x[3] = -0.5;
        let mut b = vec![0u8; 18];
        quantize_block(QuantType::Q4_0, &x, &mut b);
        assert_eq!(f16_at(&b, 0), 1.0);
        assert_eq!(b[2] & 0x0F, 0);
        assert_eq!(b[3] & 0x0F, 15);
        assert_eq!(b[4] & 0x0F, 15);
        assert_eq!(b[5] & 0x0F, 8);
        assert_eq!(b[2 + 4] & 0x0F, 8);
    }
}
