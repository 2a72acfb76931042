//! The register-tiled kernels behind [`crate::matmul_nt`] and [`crate::attend`], one file per
//! instruction set, sharing one generic driver.
//!
//! - [`Lanes`]: a 16-lane `f32` vector (one AVX-512 register, two AVX2 registers, or 16 scalars)
//!   and the handful of operations the reduction order needs;
//! - [`Elem`]: loading 16 weights of one dtype, widened exactly to `f32`;
//! - `driver`: the tiles and loops, generic over both, so every instruction set follows the
//!   same per-accumulator order as [`crate::reference_dot`];
//! - `attn`: blocked attention's scores (16 keys per vector against keys transposed in blocks,
//!   the reference's lane tree as vector additions) and its weighted sums over several rows;
//! - `scalar`, `avx2`, `avx512`: the [`Lanes`] implementations and the `#[target_feature]`
//!   entry points.
//!
//! Everything here works on raw pointers that the safe callers (`matmul.rs`, `attend.rs`) have
//! bounds-checked; the `# Safety` section of each entry point says what they must guarantee.
//!
//! # Safety
//!
//! Every `unsafe fn` in this module and below shares one contract, and its own `# Safety`
//! section names only what it adds:
//!
//! - **features**: code that uses an instruction set's [`Lanes`] runs with that set's
//!   features enabled and present on the CPU: inside `avx2`'s `#[target_feature(enable =
//!   "avx2,fma,f16c")]` or `avx512`'s `#[target_feature(enable =
//!   "avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")]` entry points, which are only reached
//!   through [`gemm_cols`], [`attn_scores`] and [`attn_sums`] with an `isa` for which
//!   [`Isa::is_available`] (`is_x86_feature_detected!`) is true. `Scalar` needs nothing;
//! - **memory**: every pointer is valid for the elements read or written (16 lanes, or the
//!   stated `len`), computed offsets stay inside the allocation the pointer came from, and no
//!   alignment is required (loads and stores are unaligned);
//! - **exclusivity**: nothing else reads or writes an output range while a call writes it
//!   (each thread owns a disjoint range of output columns or rows).

mod attn;
#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod driver;
mod scalar;

pub(crate) use attn::{AttnRow, Scores, Values};

use crate::{Dtype, Isa};

/// A 16-lane `f32` vector and the operations the fixed reduction order is built from.
///
/// # Safety
/// Every method may use instructions of its instruction set: call them only from code running
/// with those features enabled (the `#[target_feature]` entry points). Pointer arguments must be
/// valid for the lanes read or written; no alignment is required.
pub(crate) trait Lanes {
    /// The vector.
    type V: Copy;
    /// Up to this many rows go through the weights in a single pass (decode).
    const DECODE_ROWS: usize;
    /// Rows per tile when there are more rows than [`Lanes::DECODE_ROWS`] (prefill).
    const PREFILL_ROWS: usize;
    /// Columns per tile in prefill (the packed panel interleaves this many columns).
    const PREFILL_COLS: usize;
    /// Query rows sharing each load of keys or values in blocked attention (1 to 5).
    const ATTN_ROWS: usize;

    /// All lanes `+0.0`.
    ///
    /// # Safety
    /// The module's *features* contract only.
    unsafe fn zero() -> Self::V;
    /// All lanes `v`.
    ///
    /// # Safety
    /// The module's *features* contract only.
    unsafe fn splat(v: f32) -> Self::V;
    /// 16 `f32` from `p`.
    ///
    /// # Safety
    /// The module's contract; `p` is readable for 16 `f32`.
    unsafe fn load(p: *const f32) -> Self::V;
    /// The first `len < 16` `f32` from `p`, the other lanes `0.0`.
    ///
    /// # Safety
    /// The module's contract; `len < 16` and `p` is readable for `len` `f32` (only those).
    unsafe fn load_part(p: *const f32, len: usize) -> Self::V;
    /// 16 little-endian `bf16` from `p`, widened.
    ///
    /// # Safety
    /// The module's contract; `p` is readable for 32 bytes.
    unsafe fn load_bf16(p: *const u8) -> Self::V;
    /// The first `len < 16` `bf16` from `p`, widened, the other lanes `0.0`.
    ///
    /// # Safety
    /// The module's contract; `len < 16` and `p` is readable for `2 · len` bytes.
    unsafe fn load_bf16_part(p: *const u8, len: usize) -> Self::V;
    /// 16 little-endian `f16` from `p`, widened.
    ///
    /// # Safety
    /// The module's contract; `p` is readable for 32 bytes.
    unsafe fn load_f16(p: *const u8) -> Self::V;
    /// The first `len < 16` `f16` from `p`, widened, the other lanes `0.0`.
    ///
    /// # Safety
    /// The module's contract; `len < 16` and `p` is readable for `2 · len` bytes.
    unsafe fn load_f16_part(p: *const u8, len: usize) -> Self::V;
    /// Writes the 16 lanes to `p`.
    ///
    /// # Safety
    /// The module's contract; `p` is writable for 16 `f32`.
    unsafe fn store(p: *mut f32, v: Self::V);
    /// Writes the first `len < 16` lanes to `p`.
    ///
    /// # Safety
    /// The module's contract; `len < 16` and `p` is writable for `len` `f32` (only those are
    /// written).
    unsafe fn store_part(p: *mut f32, v: Self::V, len: usize);
    /// `a + b` per lane.
    ///
    /// # Safety
    /// The module's *features* contract only.
    unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c` per lane, rounded once.
    ///
    /// # Safety
    /// The module's *features* contract only.
    unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// The fixed tree over the lanes (see [`crate::reference_dot`]).
    ///
    /// # Safety
    /// The module's *features* contract only.
    unsafe fn sum(v: Self::V) -> f32;
    /// Hints that the cache line at `p` will be read soon (`p` may be past the end of the
    /// data: it is never dereferenced).
    ///
    /// # Safety
    /// The module's *features* contract only; `p` may be any address.
    #[inline(always)]
    unsafe fn prefetch(_p: *const u8) {}
    /// [`Lanes::sum`] of four vectors (an instruction set may share the shuffles).
    ///
    /// # Safety
    /// The module's *features* contract only.
    #[inline(always)]
    unsafe fn sum4(v: [Self::V; 4]) -> [f32; 4] {
        // SAFETY: `sum` needs only the features, which our caller guarantees.
        unsafe {
            [
                Self::sum(v[0]),
                Self::sum(v[1]),
                Self::sum(v[2]),
                Self::sum(v[3]),
            ]
        }
    }
    /// Runs `tile` with `rows` rows (`1..=DECODE_ROWS.max(PREFILL_ROWS)`) over `ncols` columns,
    /// choosing how many columns share a register tile for that row count.
    ///
    /// # Safety
    /// The module's contract, and that of `driver::cols` for `tile` with `rows` rows and
    /// `ncols` columns; `rows` is in `1..=DECODE_ROWS.max(PREFILL_ROWS)` (else it panics).
    unsafe fn rows<E: Elem>(rows: usize, tile: &driver::Tile, ncols: usize);
    /// Runs `tile` (a packed `f32` panel) with `rows <= PREFILL_ROWS` rows and
    /// [`Lanes::PREFILL_COLS`] columns per register tile.
    ///
    /// # Safety
    /// As [`Lanes::rows`] for a packed panel with `rows <= PREFILL_ROWS`.
    unsafe fn rows_packed(rows: usize, tile: &driver::Tile, ncols: usize);
}

/// A weight element type, loaded 16 at a time and widened exactly to `f32`.
pub(crate) trait Elem {
    /// The dtype.
    const DTYPE: Dtype;
    /// 16 elements from `p`.
    ///
    /// # Safety
    /// The module's contract for `L`; `p` is readable for 16 elements of [`Elem::DTYPE`].
    unsafe fn load<L: Lanes>(p: *const u8) -> L::V;
    /// The first `len < 16` elements from `p`, the rest `0.0`.
    ///
    /// # Safety
    /// The module's contract for `L`; `len < 16` and `p` is readable for `len` elements of
    /// [`Elem::DTYPE`].
    unsafe fn load_part<L: Lanes>(p: *const u8, len: usize) -> L::V;
}

/// `f32` weights.
pub(crate) struct F32;
/// `bf16` weights.
pub(crate) struct Bf16;
/// `f16` weights.
pub(crate) struct F16;

impl Elem for F32 {
    const DTYPE: Dtype = Dtype::F32;
    #[inline(always)]
    unsafe fn load<L: Lanes>(p: *const u8) -> L::V {
        // SAFETY: our caller meets `Elem::load`'s contract, which is `L`'s for 16 f32.
        unsafe { L::load(p.cast()) }
    }
    #[inline(always)]
    unsafe fn load_part<L: Lanes>(p: *const u8, len: usize) -> L::V {
        // SAFETY: our caller meets `Elem::load_part`'s contract, which is `L`'s for `len` f32.
        unsafe { L::load_part(p.cast(), len) }
    }
}

impl Elem for Bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    #[inline(always)]
    unsafe fn load<L: Lanes>(p: *const u8) -> L::V {
        // SAFETY: our caller meets `Elem::load`'s contract, which is `L`'s for 16 bf16.
        unsafe { L::load_bf16(p) }
    }
    #[inline(always)]
    unsafe fn load_part<L: Lanes>(p: *const u8, len: usize) -> L::V {
        // SAFETY: our caller meets `Elem::load_part`'s contract, which is `L`'s for `len` bf16.
        unsafe { L::load_bf16_part(p, len) }
    }
}

impl Elem for F16 {
    const DTYPE: Dtype = Dtype::F16;
    #[inline(always)]
    unsafe fn load<L: Lanes>(p: *const u8) -> L::V {
        // SAFETY: our caller meets `Elem::load`'s contract, which is `L`'s for 16 f16.
        unsafe { L::load_f16(p) }
    }
    #[inline(always)]
    unsafe fn load_part<L: Lanes>(p: *const u8, len: usize) -> L::V {
        // SAFETY: our caller meets `Elem::load_part`'s contract, which is `L`'s for `len` f16.
        unsafe { L::load_f16_part(p, len) }
    }
}

/// `out[r * ldo + j] = dot(x[r], w[j]) (+ bias[j])` over raw memory: rows `r < m` of `x` start
/// `ldx` floats apart, rows `j` of `w` start `ldw` bytes apart, each `k` long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gemm {
    /// First row of `x`.
    pub x: *const f32,
    /// Floats between rows of `x`.
    pub ldx: usize,
    /// Rows of `x` (and of `out`).
    pub m: usize,
    /// Length of every dot product.
    pub k: usize,
    /// First row of the weight.
    pub w: *const u8,
    /// Bytes between rows of the weight.
    pub ldw: usize,
    /// Element type of the weight.
    pub dtype: Dtype,
    /// `bias[j]` for column `j`, or null.
    pub bias: *const f32,
    /// `out[0, 0]`.
    pub out: *mut f32,
    /// Floats between rows of `out`.
    pub ldo: usize,
    /// How many weight rows after its own a decode tile asks for while it computes (`0`:
    /// the next tile's, as many as it has columns). Attention's scores, whose tiles are a few
    /// keys each, look further ahead.
    pub ahead_cols: usize,
}

// SAFETY: a `Gemm` is plain addresses; the entry points' contracts say who may read and write
// through them (callers hand each thread a disjoint range of output columns).
unsafe impl Send for Gemm {}
// SAFETY: as above.
unsafe impl Sync for Gemm {}

/// Computes columns `j0..j1` of `g` (every row) with `isa`.
///
/// # Safety
/// - `isa.is_available()`;
/// - `x` is readable for rows `0..m` of `k` floats at stride `ldx`; `w` for rows `j0..j1` of `k`
///   elements at stride `ldw` bytes; `bias` (unless null) for indices `j0..j1`;
/// - `out[r * ldo + j]` for `r < m`, `j0 <= j < j1` is writable and nobody else reads or writes
///   it during the call.
pub(crate) unsafe fn gemm_cols(isa: Isa, g: &Gemm, j0: usize, j1: usize, scratch: &mut Vec<f32>) {
    // SAFETY: our caller guarantees the memory contract, and `isa.is_available()`: the CPU has
    // the features each entry point enables.
    unsafe {
        match isa {
            Isa::Scalar => driver::gemm_cols::<scalar::Scalar>(g, j0, j1, scratch),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::gemm_cols(g, j0, j1, scratch),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::gemm_cols(g, j0, j1, scratch),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2 | Isa::Avx512 => unreachable!("{isa:?} is x86-64 only"),
        }
    }
}

/// Blocked attention's scores: every row's `reference_dot` with the keys of its range (see
/// `attn`).
///
/// # Safety
/// `isa.is_available()`, and the contract of `attn::scores`.
pub(crate) unsafe fn attn_scores(isa: Isa, rows: &[AttnRow], s: &Scores) {
    // SAFETY: our caller guarantees `attn::scores`'s contract, and `isa.is_available()`: the
    // CPU has the features each entry point enables.
    unsafe {
        match isa {
            Isa::Scalar => attn::scores::<scalar::Scalar>(rows, s),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::attn_scores(rows, s),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::attn_scores(rows, s),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2 | Isa::Avx512 => unreachable!("{isa:?} is x86-64 only"),
        }
    }
}

/// Blocked attention's weighted sums: every row's `out += Σ_t scores[t - base] · v_t` over
/// its range (see `attn`).
///
/// # Safety
/// `isa.is_available()`, and the contract of `attn::weighted_sums`.
pub(crate) unsafe fn attn_sums(isa: Isa, rows: &[AttnRow], base: usize, v: &Values) {
    // SAFETY: our caller guarantees `attn::weighted_sums`'s contract, and
    // `isa.is_available()`: the CPU has the features each entry point enables.
    unsafe {
        match isa {
            Isa::Scalar => attn::weighted_sums::<scalar::Scalar>(rows, base, v),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::attn_sums(rows, base, v),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::attn_sums(rows, base, v),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2 | Isa::Avx512 => unreachable!("{isa:?} is x86-64 only"),
        }
    }
}
