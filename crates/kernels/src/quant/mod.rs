//! Quantized weights (GGML's block formats), multiplied where they lie.
//!
//! A quantized weight ([`crate::Weights::quantized`]) is `n` rows of `k / block_len` blocks of
//! one [`QuantType`], the bytes of a GGUF tensor used in place. [`crate::matmul_nt`] and its
//! siblings take it like a float weight: the activation rows are quantized once per call to
//! 8-bit blocks (llama.cpp's way), each block's dot product is an exact integer sum, and a
//! fixed float formula per type turns it into the block's contribution.
//!
//! | item | job |
//! |---|---|
//! | [`QuantType`] | the block formats: GGML ids, geometry, names |
//! | `blocks` | the legacy 32-element blocks: layout, dequantization, GGML's reference quantization |
//! | `act` | the activation rows quantized to 8-bit blocks |
//! | `dot` | the scalar reference dot products (they define the bits) and the ISA dispatch |
//! | `avx2`, `avx512` | the SIMD dot products (`vpmaddubsw`/`vpmaddwd`, VNNI `vpdpbusd`) |
//! | `panel` | prefill's AVX-512 VNNI kernel: 16 weight rows unpacked once, lanes across rows |
//! | `panel_avx2` | the same for AVX2 (AVX-VNNI, AVX-512 without VNNI): 8 weight rows a panel |
//! | `product` | the matrix-product driver: work split over output rows between the team |
//! | `k` | the K-quants (Q2_K … Q6_K) and their Q8_K activations (another helper's) |
//!
//! # The reduction order (the determinism contract)
//!
//! A weight row of `k` elements is `k / block_len` blocks. The activation row is quantized
//! once per matrix product (Q8_0-style blocks for the legacy types, Q8_K blocks for the
//! K-quants). For each block `b` the dot product has an exact integer part (`i32`) and a
//! fixed, documented float formula that turns it into the block's contribution `c_b: f32`
//! (each type's scalar reference states it; no implicit fma contraction: where the formula
//! uses fma it calls `f32::mul_add` explicitly). The row's result is [`sum_blocks`] of the
//! `c_b`: lane accumulators `acc[b % BLOCK_LANES] += c_b` in increasing `b` (plain `f32` adds,
//! starting from `0.0`), then the fixed tree `((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7))`; a bias,
//! when given, is added to that sum last. Every instruction-set path reproduces those bits, so
//! a result does not depend on the machine, the thread count or the batch.
//!
//! The legacy types' formulas (`d_w`, `m_w` the weight block's scale and offset, `d_a` the
//! activation block's scale as an `f32` holding an `f16` value, `s_a` its `f16(d_a · Σ q_a)`,
//! `sumi = Σ q_w · q_a` over the 32 elements):
//!
//! - Q4_0, Q5_0, Q8_0: `c_b = (d_w · d_a) · sumi`;
//! - Q4_1, Q5_1: `c_b = fma(d_w · d_a, sumi, m_w · s_a)`.
//!
//! A padded lane (a SIMD path rounding the block count up to a multiple of 8) contributes
//! `+0.0`, which leaves every accumulator unchanged (an accumulator that starts at `+0.0` is
//! never `-0.0`). NaN results stay NaN on every path, but their payload bits are not promised.
//!
//! # Hooks for the K-quants (`k/`)
//!
//! The driver reaches a K type through four functions of `k` (the `K_QUANTS` switch below
//! turns them off: [`supported`] then refuses K types, so `Weights::quantized` returns
//! [`crate::Error::QuantUnsupported`] and nothing here panics):
//!
//! - `k::quantize_act(x: &[f32], out: &mut Vec<BlockQ8K>)`: one activation row (appended);
//! - `k::dot_row(isa: Isa, ty: QuantType, w_row: &[u8], act: &[BlockQ8K]) -> f32`: a whole
//!   row's [`sum_blocks`] (same bits on every `Isa`; `Isa::best()` is passed in);
//! - `k::dequantize_row(ty, bytes: &[u8], out: &mut [f32])`;
//! - `k::quantize_row(ty, x: &[f32], out: &mut [u8])` (GGML's reference rounding).

mod act;
mod blocks;
mod dot;
pub(crate) mod k;
mod product;
mod types;

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod panel;
#[cfg(target_arch = "x86_64")]
mod panel_avx2;
#[cfg(test)]
mod tests;

pub use types::QuantType;

pub(crate) use product::product;

use crate::{Error, Result};

/// Lanes the block contributions of a row are summed in: block `b` goes to lane
/// `b % BLOCK_LANES`.
pub const BLOCK_LANES: usize = 8;

/// The reference sum of a row's block contributions, in the contract's order (see the module
/// docs).
pub fn sum_blocks(contributions: impl IntoIterator<Item = f32>) -> f32 {
    let mut acc = [0f32; BLOCK_LANES];
    for (b, c) in contributions.into_iter().enumerate() {
        acc[b % BLOCK_LANES] += c;
    }
    tree(&acc)
}

/// The contract's fixed tree over the 8 lane accumulators.
#[inline(always)]
pub(crate) fn tree(acc: &[f32; BLOCK_LANES]) -> f32 {
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

/// Whether the K-quants (`k/`) are wired in (see "Hooks for the K-quants" above).
const K_QUANTS: bool = true;

/// Whether this build can multiply (and dequantize) `ty` weights.
pub fn supported(ty: QuantType) -> bool {
    K_QUANTS || !ty.is_k()
}

/// Dequantizes one row: `bytes` (`k / block_len` blocks) into `out` (`k` floats).
///
/// # Panics
/// If the lengths disagree, or for a type [`supported`] refuses (constructors of weights
/// check both first).
pub fn dequantize_row(ty: QuantType, bytes: &[u8], out: &mut [f32]) {
    let (len, size) = (ty.block_len(), ty.block_bytes());
    assert_eq!(
        bytes.len() / size * len,
        out.len(),
        "dequantize_row: lengths"
    );
    assert!(supported(ty), "dequantize_row: {ty} is not supported yet");
    if ty.is_k() {
        k::dequantize_row(ty, bytes, out);
        return;
    }
    for (b, o) in bytes.chunks_exact(size).zip(out.chunks_exact_mut(len)) {
        blocks::dequantize_block(ty, b, o);
    }
}

/// Quantizes one row of `k` finite values into `out` (`k / block_len` blocks) with GGML's
/// reference rounding (`quantize_row_*_ref`), so the bytes equal llama.cpp's.
///
/// # Errors
/// [`Error::QuantWidth`] unless `x.len()` is a multiple of the block length;
/// [`Error::QuantLength`] unless `out` holds exactly its blocks; [`Error::QuantNotFinite`]
/// (row 0) for a NaN or infinity; [`Error::QuantUnsupported`] for a type not
/// [`supported`].
pub fn quantize_row(ty: QuantType, x: &[f32], out: &mut [u8]) -> Result<()> {
    quantize_rows(ty, x, 1, x.len(), out)
}

/// `values` (`[n, k]` row-major) quantized to `ty`, row after row.
pub(crate) fn quantize_matrix(
    values: &[f32],
    ty: QuantType,
    n: usize,
    k: usize,
) -> Result<Vec<u8>> {
    let count = n.checked_mul(k).ok_or(Error::WeightTooLarge { n, k })?;
    if values.len() != count {
        return Err(Error::WeightLength {
            n,
            k,
            dtype: crate::Dtype::F32,
            expected: count.saturating_mul(4),
            actual: values.len().saturating_mul(4),
        });
    }
    let row = ty.row_bytes(k).ok_or(Error::QuantWidth {
        ty,
        block_len: ty.block_len(),
        k,
    })?;
    let mut out = vec![0u8; row * n];
    quantize_rows(ty, values, n, k, &mut out)?;
    Ok(out)
}

/// [`quantize_row`] over `n` rows of `k`.
fn quantize_rows(ty: QuantType, x: &[f32], n: usize, k: usize, out: &mut [u8]) -> Result<()> {
    if !supported(ty) {
        return Err(Error::QuantUnsupported { ty });
    }
    let row = ty.row_bytes(k).ok_or(Error::QuantWidth {
        ty,
        block_len: ty.block_len(),
        k,
    })?;
    if out.len() != row * n || x.len() != n * k {
        return Err(Error::QuantLength {
            n,
            k,
            ty,
            expected: row * n,
            actual: out.len(),
        });
    }
    if let Some(at) = x.iter().position(|v| !v.is_finite()) {
        return Err(Error::QuantNotFinite {
            ty,
            row: at / k.max(1),
            index: at % k.max(1),
            value: x[at],
        });
    }
    if ty.is_k() {
        k::quantize_row(ty, x, out);
        return Ok(());
    }
    let (len, size) = (ty.block_len(), ty.block_bytes());
    for (xb, ob) in x.chunks_exact(len).zip(out.chunks_exact_mut(size)) {
        blocks::quantize_block(ty, xb, ob);
    }
    Ok(())
}
