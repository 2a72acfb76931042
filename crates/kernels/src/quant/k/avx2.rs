//! The integer sums of a K-quant block with its Q8_K block in 256-bit registers, as
//! llama.cpp's AVX2 kernels compute them: levels unpacked to unsigned bytes, `vpmaddubsw`
//! against the activations (pairs of products in `i16`, exact: `|2 · 63 · 128| < 2¹⁵`), then
//! the sub-block scales applied with `vpmaddwd` into `i32` lanes ([`Madd`]: or VNNI's
//! `vpdpwssd`, which fuses that multiply-add with the accumulation). Each type only unpacks a
//! block ([`Unpacked`]; the per-type unpacking lives in [`unpack`]); one generic kernel
//! ([`dot_unpacked`]) takes it against any number of activation rows; 8 blocks' sums are
//! reduced together ([`reduce8`]) and the float formula of `common::contribution[_min]` runs
//! lane-wise ([`rows_of`]).
//!
//! The kernels are `#[inline(always)]` and generic over [`Madd`]; the `#[target_feature]`
//! entry points ([`dot_rows`] here, `avx512::dot_rows*`) instantiate them.
//!
//! # Safety
//!
//! Every `unsafe fn` here needs the CPU features of the entry point that inlines it: AVX2 and
//! F16C at least, and AVX512-VNNI + AVX512-VL for [`Vnni`]. Loads go through [`load`], which reads
//! from bounds-checked slices.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

use super::q8k::BlockQ8K;
use super::{q2k, q3k, q4k, q5k, q6k, QuantType};
use crate::quant::BLOCK_LANES;
use unpack::{q2k_unpack, q3k_unpack, q4k_unpack, q5k_unpack, q6k_unpack, Unpacked};

mod unpack;

/// How the `i16` pair products of a sub-block are scaled and accumulated into `i32` lanes:
/// `acc + madd(p, s)` exactly (the sums never overflow `i32`).
pub(super) trait Madd {
    /// `acc + vpmaddwd(p, s)`.
    ///
    /// # Safety
    /// The module's contract: the CPU features of the implementing type.
    unsafe fn madd(acc: __m256i, p: __m256i, s: __m256i) -> __m256i;
}

/// AVX2: `vpmaddwd` then `vpaddd`.
pub(super) struct Plain;

impl Madd for Plain {
    #[inline(always)]
    unsafe fn madd(acc: __m256i, p: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the module's contract: the CPU has AVX2, all these register operations need.
        unsafe { _mm256_add_epi32(acc, _mm256_madd_epi16(p, s)) }
    }
}

/// AVX512-VNNI (256-bit, VL): `vpdpwssd`, the multiply-add and accumulation in one.
pub(super) struct Vnni;

impl Madd for Vnni {
    #[inline(always)]
    unsafe fn madd(acc: __m256i, p: __m256i, s: __m256i) -> __m256i {
        // SAFETY: the module's contract: the CPU has AVX512-VNNI and AVX512-VL.
        unsafe { _mm256_dpwssd_epi32(acc, p, s) }
    }
}

/// 32 bytes from `bytes[at..at + 32]` (bounds-checked), unaligned.
///
/// # Safety
/// The CPU has AVX.
#[inline(always)]
unsafe fn load<T: Copy>(bytes: &[T], at: usize) -> __m256i {
    let s = &bytes[at..at + 32 / std::mem::size_of::<T>()];
    // SAFETY: `s` is a checked sub-slice of 32 bytes; the load is unaligned; the CPU has AVX
    // (our contract).
    unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
}

/// The 16 `bsums` of a Q8_K block.
///
/// # Safety
/// The CPU has AVX.
#[inline(always)]
unsafe fn bsums(a: &BlockQ8K) -> __m256i {
    // SAFETY: `bsums` is 16 `i16` = 32 bytes; unaligned load; the CPU has AVX.
    unsafe { _mm256_loadu_si256(a.bsums.as_ptr().cast()) }
}

/// `(isum, msum)` of an unpacked block against a Q8_K block, spread over 8 `i32` lanes each
/// (see [`Unpacked`]); `ibias` / `mins` say whether the type has the offset / min terms
/// (constants where it is inlined).
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn dot_unpacked<M: Madd>(
    u: &Unpacked,
    a: &BlockQ8K,
    ibias: bool,
    mins: bool,
) -> (__m256i, __m256i) {
    // SAFETY: the module's contract (CPU features); every load is bounds-checked.
    unsafe {
        let mut acc = [_mm256_setzero_si256(); 2];
        for g in 0..8 {
            let p = _mm256_maddubs_epi16(u.lv[g], load(&a.qs, 32 * g));
            acc[g % 2] = M::madd(acc[g % 2], p, u.sc[g]);
        }
        let mut isum = _mm256_add_epi32(acc[0], acc[1]);
        let bs = bsums(a);
        if ibias {
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(bs, u.ibias));
        }
        let msum = if mins {
            _mm256_madd_epi16(bs, u.mbias)
        } else {
            _mm256_setzero_si256()
        };
        (isum, msum)
    }
}

/// One K type's block kernel, as the row loop sees it.
trait Kernel {
    /// Bytes per block.
    const BYTES: usize;
    /// Whether the type has mins (the second sum and `dmin`).
    const MINS: bool;
    /// Whether the levels carry an offset taken back out through `bsums`.
    const IBIAS: bool;
    /// Offset of the `f16` `d` (then `dmin` when [`Kernel::MINS`]).
    const D: usize;
    /// The block's [`Unpacked`] form.
    ///
    /// # Safety
    /// The module's contract; `b` holds [`Kernel::BYTES`] bytes.
    unsafe fn unpack(b: &[u8]) -> Unpacked;
}

/// The kernel of Q2_K, Q3_K, … (`T` = 2..=6).
struct K<const T: u8>;

/// The first `N` bytes of `b` as an array (the row loop hands out exact blocks).
#[inline(always)]
fn exact<const N: usize>(b: &[u8]) -> &[u8; N] {
    b[..N].try_into().unwrap_or(&[0; N])
}

macro_rules! kernel {
    ($t:literal, $module:ident, $unpack:ident, mins: $mins:literal, ibias: $ibias:literal, d: $d:expr) => {
        impl Kernel for K<$t> {
            const BYTES: usize = $module::BYTES;
            const MINS: bool = $mins;
            const IBIAS: bool = $ibias;
            const D: usize = $d;
            #[inline(always)]
            unsafe fn unpack(b: &[u8]) -> Unpacked {
                // SAFETY: the module's contract, passed on.
                unsafe { $unpack(exact::<{ $module::BYTES }>(b)) }
            }
        }
    };
}

kernel!(2, q2k, q2k_unpack, mins: true, ibias: false, d: q2k::D);
kernel!(3, q3k, q3k_unpack, mins: false, ibias: true, d: q3k::D);
kernel!(4, q4k, q4k_unpack, mins: true, ibias: false, d: 0);
kernel!(5, q5k, q5k_unpack, mins: true, ibias: false, d: 0);
kernel!(6, q6k, q6k_unpack, mins: false, ibias: true, d: q6k::D);

/// Lane `j` = the sum of the 8 lanes of `v[j]` (exact: the true sums fit in `i32`).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn reduce8(v: &[__m256i; 8]) -> __m256i {
    // SAFETY: register operations; the CPU has AVX2 (our contract).
    unsafe {
        let h01 = _mm256_hadd_epi32(v[0], v[1]);
        let h23 = _mm256_hadd_epi32(v[2], v[3]);
        let h45 = _mm256_hadd_epi32(v[4], v[5]);
        let h67 = _mm256_hadd_epi32(v[6], v[7]);
        let lo = _mm256_hadd_epi32(h01, h23);
        let hi = _mm256_hadd_epi32(h45, h67);
        _mm256_add_epi32(
            _mm256_permute2x128_si256::<0x20>(lo, hi),
            _mm256_permute2x128_si256::<0x31>(lo, hi),
        )
    }
}

/// The dot products of one weight row with `R` activation rows (`acts`: `R` rows of
/// `nblocks` Q8_K blocks each, one after the other) into `out[..R]`, 8 blocks at a time: each
/// weight block is unpacked once for all `R` rows, each block's integer sums stay in vectors,
/// one transposing reduction gives 8 blocks' `isum` (and `msum`) in lanes 0..8, and the float
/// formula runs lane-wise, so block `8·g + j` is added to lane `j` of a row's accumulator:
/// exactly [`crate::quant::sum_blocks`]'s order. Lanes past the row's last block add `±0.0`,
/// which changes no accumulator (they start at `+0.0` and so are never `−0.0`). The formula
/// is `common::contribution[_min]`'s, operation for operation (`vmulps`, `vsubps`, no fma),
/// and the lane tree is the contract's.
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn rows_of<T: Kernel, M: Madd, const R: usize>(
    w_row: &[u8],
    nblocks: usize,
    acts: &[BlockQ8K],
    out: &mut [f32],
) {
    // SAFETY: the module's contract; every slice access below is bounds-checked, and every
    // element of `isums` / `msums` is written (by a block or as zero) before it is read.
    unsafe {
        let zero = _mm256_setzero_si256();
        let mut acc = [_mm256_setzero_ps(); R];
        let mut g0 = 0;
        while g0 < nblocks {
            let len = (nblocks - g0).min(BLOCK_LANES);
            let mut isums = [[MaybeUninit::<__m256i>::uninit(); 8]; R];
            let mut msums = [[MaybeUninit::<__m256i>::uninit(); 8]; R];
            let mut d = [0u16; 8];
            let mut dmin = [0u16; 8];
            let mut ad = [[0f32; 8]; R];
            for j in 0..len {
                let b = &w_row[(g0 + j) * T::BYTES..(g0 + j + 1) * T::BYTES];
                let u = T::unpack(b);
                for r in 0..R {
                    let a = &acts[r * nblocks + g0 + j];
                    let (i, m) = dot_unpacked::<M>(&u, a, T::IBIAS, T::MINS);
                    isums[r][j].write(i);
                    msums[r][j].write(m);
                    ad[r][j] = a.d;
                }
                d[j] = u16::from_le_bytes([b[T::D], b[T::D + 1]]);
                if T::MINS {
                    dmin[j] = u16::from_le_bytes([b[T::D + 2], b[T::D + 3]]);
                }
            }
            let d = _mm256_cvtph_ps(_mm_loadu_si128(d.as_ptr().cast()));
            let dmin = _mm256_cvtph_ps(_mm_loadu_si128(dmin.as_ptr().cast()));
            for r in 0..R {
                for j in len..BLOCK_LANES {
                    isums[r][j].write(zero);
                    msums[r][j].write(zero);
                }
                let ad = _mm256_loadu_ps(ad[r].as_ptr());
                let isum = reduce8(&isums[r].map(|v| v.assume_init()));
                let mut c = _mm256_mul_ps(_mm256_mul_ps(ad, d), _mm256_cvtepi32_ps(isum));
                if T::MINS {
                    let msum = reduce8(&msums[r].map(|v| v.assume_init()));
                    let dm = _mm256_mul_ps(ad, dmin);
                    c = _mm256_sub_ps(c, _mm256_mul_ps(dm, _mm256_cvtepi32_ps(msum)));
                }
                acc[r] = _mm256_add_ps(acc[r], c);
            }
            g0 += len;
        }
        for (o, acc) in out.iter_mut().zip(acc) {
            // The contract's tree: `vhaddps` adds neighbours (a0+a1, a2+a3 | a4+a5, a6+a7),
            // then those pairs, then the two halves: ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)).
            let h = _mm256_hadd_ps(acc, acc);
            let h = _mm256_hadd_ps(h, h);
            *o = _mm_cvtss_f32(_mm_add_ss(
                _mm256_castps256_ps128(h),
                _mm256_extractf128_ps::<1>(h),
            ));
        }
    }
}

/// Up to 4 activation rows at a time (see [`rows_of`]).
///
/// # Safety
/// The module's contract.
#[inline(always)]
unsafe fn rows_in_fours<T: Kernel, M: Madd>(w_row: &[u8], acts: &[BlockQ8K], out: &mut [f32]) {
    let rows = out.len();
    let nblocks = acts
        .len()
        .checked_div(rows)
        .map_or(0, |per_row| (w_row.len() / T::BYTES).min(per_row));
    let mut r0 = 0;
    // SAFETY: the module's contract, passed on; each call gets its rows' activations.
    unsafe {
        while r0 < rows {
            let a = &acts[r0 * nblocks..];
            let o = &mut out[r0..];
            match rows - r0 {
                1 => rows_of::<T, M, 1>(w_row, nblocks, a, o),
                2 => rows_of::<T, M, 2>(w_row, nblocks, a, o),
                3 => rows_of::<T, M, 3>(w_row, nblocks, a, o),
                _ => rows_of::<T, M, 4>(w_row, nblocks, a, o),
            }
            r0 += 4;
        }
    }
}

/// The dot products of one weight row with `out.len()` activation rows (see
/// [`super::dot_rows`]) with the kernels above.
///
/// # Safety
/// The module's contract.
#[inline(always)]
pub(super) unsafe fn rows<M: Madd>(
    ty: QuantType,
    w_row: &[u8],
    acts: &[BlockQ8K],
    out: &mut [f32],
) {
    // SAFETY: the module's contract, passed on.
    unsafe {
        match ty {
            QuantType::Q2K => rows_in_fours::<K<2>, M>(w_row, acts, out),
            QuantType::Q3K => rows_in_fours::<K<3>, M>(w_row, acts, out),
            QuantType::Q4K => rows_in_fours::<K<4>, M>(w_row, acts, out),
            QuantType::Q5K => rows_in_fours::<K<5>, M>(w_row, acts, out),
            QuantType::Q6K => rows_in_fours::<K<6>, M>(w_row, acts, out),
            _ => out.fill(f32::NAN),
        }
    }
}

/// [`super::dot_rows`] with AVX2.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(ty: QuantType, w_row: &[u8], acts: &[BlockQ8K], out: &mut [f32]) {
    // SAFETY: this function's features are the module's contract for `Plain`.
    unsafe { rows::<Plain>(ty, w_row, acts, out) }
}
