//! The K-quants: Q2_K, Q3_K, Q4_K, Q5_K and Q6_K weights (GGML's 256-element super-blocks,
//! the bytes of a GGUF tensor used in place) and the Q8_K activation blocks they multiply.
//!
//! | item | job |
//! |---|---|
//! | `q2k` … `q6k` | one file per type: layout, dequantization, llama.cpp's reference quantization, the scalar dot product with Q8_K (which defines the bits) and its float formula |
//! | `q8k` | [`BlockQ8K`] and the activation quantizer (`quantize_row_q8_K_ref`) |
//! | `search` | the per-sub-block scale searches of llama.cpp's quantizers |
//! | `common` | `f16` fields, `nearest_int`, the 6-bit scale packings |
//! | `avx2`, `avx512` | the integer sums of a block with SIMD (`vpmaddubsw`/`vpmaddwd`; AVX-512 adds VNNI `vpdpwssd` where present), 8 blocks' sums reduced together and the float formula lane-wise; up to 4 activation rows per unpacked weight block ([`dot_rows`]) |
//! | `panel` | prefill's AVX-512 VNNI kernel for every K-quant: 16 weight rows unpacked once, lanes across rows |
//! | `panel_avx2` | the same on AVX2: 8 weight rows a panel, `vpmaddubsw` + `vpmaddwd` with the sub-block scales |
//! | `golden/` | llama.cpp's own bytes and dot products for the tests, with the sources that made them |
//!
//! # Bits
//!
//! Each type's dot product with a Q8_K block has an exact integer part (one or two `i32`
//! sums: the scaled level products, and for the types with mins the mins times the Q8_K
//! block's `bsums`) and a float formula (`common::contribution[_min]`, each product rounded,
//! no fma) that every path evaluates with the same operations (the SIMD paths lane-wise, 8
//! blocks at a time). The SIMD paths' integer sums are exact in every
//! order (`vpmaddubsw` cannot saturate here: levels are at most 63 and activations at least
//! −128), so every [`Isa`] gives the scalar reference's bits. A row's result is
//! [`super::sum_blocks`] of its blocks' contributions (the determinism contract of
//! [`super`]).
//!
//! Levels are made unsigned where a type's are signed (Q3_K: `q + 4`, Q6_K: `q + 32`) and
//! the offset is taken back out through the `bsums`: `Σ (q + o)·a − o·Σ a = Σ q·a`, exactly.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod common;
#[cfg(target_arch = "x86_64")]
pub(crate) mod panel;
#[cfg(target_arch = "x86_64")]
pub(crate) mod panel_avx2;
mod q2k;
mod q3k;
mod q4k;
mod q5k;
mod q6k;
mod q8k;
mod search;
#[cfg(test)]
mod tests;

pub(crate) use q8k::BlockQ8K;

use super::{sum_blocks, QuantType};
use crate::Isa;
use common::QK_K;
use std::sync::OnceLock;

/// Appends the Q8_K blocks of one activation row to `out` (`x.len()` a multiple of 256;
/// a ragged tail is ignored), quantized as llama.cpp's `quantize_row_q8_K_ref` does.
pub(crate) fn quantize_act(x: &[f32], out: &mut Vec<BlockQ8K>) {
    out.extend(
        x.chunks_exact(QK_K)
            .filter_map(|c| <&[f32; QK_K]>::try_from(c).ok())
            .map(BlockQ8K::quantize),
    );
}

/// Which SIMD kernel family a call runs: the requested [`Isa`] if this CPU has it, else the
/// scalar reference (all give the same bits, so the fallback changes only speed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// The scalar reference.
    Scalar,
    /// AVX2 `vpmaddubsw` + `vpmaddwd`.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512 BW/VL at 256 bits without VNNI (`vpmaddwd`).
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX-512 BW/VL at 256 bits with VNNI (`vpdpwssd`).
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
}

impl Path {
    /// The path for `isa` on this CPU (detected once, then a table lookup: the driver asks
    /// once per row).
    pub(crate) fn of(isa: Isa) -> Path {
        static PATHS: OnceLock<[Path; 3]> = OnceLock::new();
        let paths = PATHS.get_or_init(|| [Isa::Scalar, Isa::Avx2, Isa::Avx512].map(Path::detect));
        #[cfg(all(test, target_arch = "x86_64"))]
        if isa == Isa::Avx512
            && paths[2] == Path::Avx512Vnni
            && crate::quant::dot::NO_VNNI.load(std::sync::atomic::Ordering::Relaxed)
        {
            return Path::Avx512;
        }
        match isa {
            Isa::Scalar => paths[0],
            Isa::Avx2 => paths[1],
            Isa::Avx512 => paths[2],
        }
    }

    /// The path for `isa`, asking the CPU.
    fn detect(isa: Isa) -> Path {
        match isa {
            Isa::Scalar => Path::Scalar,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if isa.is_available() => Path::Avx2,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if isa.is_available() => {
                if std::arch::is_x86_feature_detected!("avx512vnni") {
                    Path::Avx512Vnni
                } else {
                    Path::Avx512
                }
            }
            _ => Path::Scalar,
        }
    }

    /// Every path this CPU can run (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Path> {
        let mut paths = vec![Path::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if Isa::Avx2.is_available() {
                paths.push(Path::Avx2);
            }
            if Isa::Avx512.is_available() {
                paths.push(Path::Avx512);
                if std::arch::is_x86_feature_detected!("avx512vnni") {
                    paths.push(Path::Avx512Vnni);
                }
            }
        }
        paths
    }
}

/// The dot product of one weight row (`w_row`: whole blocks of `ty`) with its Q8_K activation
/// blocks, summed in the contract's order ([`super::sum_blocks`]). The same bits on every
/// `isa`. Blocks past the shorter of the two are ignored; a type that is not a K-quant gives
/// NaN (the driver sends only K types here).
// The driver calls one of `dot_row` / `dot_rows` (the other serves the tests).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn dot_row(isa: Isa, ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    dot_row_on(Path::of(isa), ty, w_row, act)
}

/// [`dot_row`] on an explicit path (the path must be one [`Path::of`] gives on this CPU).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn dot_row_on(path: Path, ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    if path == Path::Scalar {
        return scalar_row(ty, w_row, act);
    }
    let mut out = [0f32];
    dot_rows_on(path, ty, w_row, act, &mut out);
    out[0]
}

/// The dot products of one weight row with `out.len()` activation rows: `acts` holds the
/// rows one after the other, each as many Q8_K blocks as `w_row` has weight blocks, and
/// `out[r]` = [`dot_row`] of row `r`, bit for bit. The SIMD paths unpack each weight block
/// once for up to 4 activation rows (prefill). A type that is not a K-quant gives NaN.
// The driver calls one of `dot_row` / `dot_rows` (the other serves the tests).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn dot_rows(isa: Isa, ty: QuantType, w_row: &[u8], acts: &[BlockQ8K], out: &mut [f32]) {
    dot_rows_on(Path::of(isa), ty, w_row, acts, out);
}

/// [`dot_rows`] on an explicit path (the path must be one [`Path::of`] gives on this CPU).
pub(crate) fn dot_rows_on(
    path: Path,
    ty: QuantType,
    w_row: &[u8],
    acts: &[BlockQ8K],
    out: &mut [f32],
) {
    match path {
        Path::Scalar => {
            let nb = if out.is_empty() {
                0
            } else {
                acts.len() / out.len()
            };
            for (r, o) in out.iter_mut().enumerate() {
                *o = scalar_row(ty, w_row, &acts[r * nb..(r + 1) * nb]);
            }
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Path::of` (or `Path::available`) gives `Avx2` only when the CPU has AVX2,
        // FMA and F16C.
        Path::Avx2 => unsafe { avx2::dot_rows(ty, w_row, acts, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Path::of` gives `Avx512` only when the CPU has AVX-512 F/BW/VL/DQ, FMA and
        // F16C.
        Path::Avx512 => unsafe { avx512::dot_rows(ty, w_row, acts, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Path::of` gives `Avx512Vnni` only when the CPU also has AVX512-VNNI.
        Path::Avx512Vnni => unsafe { avx512::dot_rows_vnni(ty, w_row, acts, out) },
    }
}

/// Splits `w_row` into blocks of `N` bytes paired with their activation blocks.
#[inline(always)]
pub(crate) fn blocks<'a, const N: usize>(
    w_row: &'a [u8],
    act: &'a [BlockQ8K],
) -> impl Iterator<Item = (&'a [u8; N], &'a BlockQ8K)> + 'a {
    w_row
        .chunks_exact(N)
        .filter_map(|b| <&[u8; N]>::try_from(b).ok())
        .zip(act)
}

/// The scalar reference row.
fn scalar_row(ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32 {
    match ty {
        QuantType::Q2K => {
            sum_blocks(blocks::<{ q2k::BYTES }>(w_row, act).map(|(b, a)| q2k::dot(b, a)))
        }
        QuantType::Q3K => {
            sum_blocks(blocks::<{ q3k::BYTES }>(w_row, act).map(|(b, a)| q3k::dot(b, a)))
        }
        QuantType::Q4K => {
            sum_blocks(blocks::<{ q4k::BYTES }>(w_row, act).map(|(b, a)| q4k::dot(b, a)))
        }
        QuantType::Q5K => {
            sum_blocks(blocks::<{ q5k::BYTES }>(w_row, act).map(|(b, a)| q5k::dot(b, a)))
        }
        QuantType::Q6K => {
            sum_blocks(blocks::<{ q6k::BYTES }>(w_row, act).map(|(b, a)| q6k::dot(b, a)))
        }
        _ => f32::NAN,
    }
}

/// Dequantizes one row (whole blocks of `ty` in `bytes`) into `out`, bit for bit as GGML's
/// `dequantize_row_*` does. Stops at the shorter of the two; a type that is not a K-quant
/// leaves `out` untouched.
pub(crate) fn dequantize_row(ty: QuantType, bytes: &[u8], out: &mut [f32]) {
    fn each<const N: usize>(bytes: &[u8], out: &mut [f32], f: fn(&[u8; N], &mut [f32; QK_K])) {
        let outs = out
            .chunks_exact_mut(QK_K)
            .filter_map(|o| <&mut [f32; QK_K]>::try_from(o).ok());
        for (b, o) in bytes
            .chunks_exact(N)
            .filter_map(|b| <&[u8; N]>::try_from(b).ok())
            .zip(outs)
        {
            f(b, o);
        }
    }
    match ty {
        QuantType::Q2K => each(bytes, out, q2k::dequantize),
        QuantType::Q3K => each(bytes, out, q3k::dequantize),
        QuantType::Q4K => each(bytes, out, q4k::dequantize),
        QuantType::Q5K => each(bytes, out, q5k::dequantize),
        QuantType::Q6K => each(bytes, out, q6k::dequantize),
        _ => {}
    }
}

/// Quantizes one row (`x.len()` a multiple of 256) into whole blocks of `ty` in `out`, with
/// llama.cpp's reference rounding (`quantize_row_q*_K_ref`), so the bytes equal
/// llama.cpp's for finite input. Stops at the shorter of the two; a type that is not a
/// K-quant leaves `out` untouched.
pub(crate) fn quantize_row(ty: QuantType, x: &[f32], out: &mut [u8]) {
    fn each<const N: usize>(x: &[f32], out: &mut [u8], f: fn(&[f32; QK_K], &mut [u8; N])) {
        let outs = out
            .chunks_exact_mut(N)
            .filter_map(|o| <&mut [u8; N]>::try_from(o).ok());
        for (xb, o) in x
            .chunks_exact(QK_K)
            .filter_map(|c| <&[f32; QK_K]>::try_from(c).ok())
            .zip(outs)
        {
            f(xb, o);
        }
    }
    match ty {
        QuantType::Q2K => each(x, out, q2k::quantize),
        QuantType::Q3K => each(x, out, q3k::quantize),
        QuantType::Q4K => each(x, out, q4k::quantize),
        QuantType::Q5K => each(x, out, q5k::quantize),
        QuantType::Q6K => each(x, out, q6k::quantize),
        _ => {}
    }
}
