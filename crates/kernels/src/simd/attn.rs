//! The loops of attention over several query rows at once (the query heads of one kv head in
//! decode; many positions in prefill), shared by every instruction set.
//!
//! # Scores against transposed keys
//!
//! A 16-lane accumulator per dot product (as [`super::driver`] does) ends every dot with a
//! horizontal tree of shuffles; with a head of 64 that tree costs about as much as the four
//! multiply-adds before it. Here the keys of one kv head are transposed in blocks of 16
//! positions (`kt[b][i][t % 16]`: dimension `i` of the block's 16 keys side by side), so one
//! vector holds the *same lane* of 16 different dot products:
//!
//! - `A_l` (lane `l` of [`crate::reference_dot`] for 16 keys at once) starts at `+0.0` and takes
//!   `fma(q[16c + l], kt[16c + l], A_l)` for the chunks `c` in increasing order — exactly the
//!   steps of lane `l` of the reference (the padded dimensions are zeros in both the query
//!   copy and the transposed keys, so they do the reference's `fma(0, 0, acc)` too);
//! - the reference's tree over lanes (`l + 8`, `+ 4`, `+ 2`, `+ 1`) becomes plain vector
//!   additions between the `A_l`: `S8_l = A_l + A_{l+8}`, `S4_l = S8_l + S8_{l+4}`, …, each
//!   the same two operands as the reference's step for every one of the 16 keys.
//!
//! So every score is bit for bit `reference_dot(q, k_t)`, whichever path or block computed it,
//! and `R` query rows share each load of the transposed keys.
//!
//! # Weighted sums over several rows
//!
//! `out_r[i] = Σ_t e_r[t] · v_t[i]` is one fused multiply-add chain per output element over `t`
//! in increasing order from `+0.0`; `R` rows whose visible
//! ranges overlap share each load of `v_t` over the common range. The accumulators live in the
//! output rows between phases (a store and a load are exact), so a row's chain is the same
//! steps in the same order whether it ran alone or beside others.

use super::{Bf16, Elem, Lanes, F16, F32};
use crate::{Dtype, LANES};

/// One query row of a blocked attention call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AttnRow {
    /// The query, zero-padded to `chunks · 16` floats.
    pub q: *const f32,
    /// First visible key position.
    pub lo: usize,
    /// One past the last visible key position.
    pub hi: usize,
    /// `scores[t - base]` for the visible `t` (written by the scores pass, holds the
    /// exponentials for the weighted-sum pass).
    pub scores: *mut f32,
    /// The `d` outputs (accumulated in place; zeroed by the caller).
    pub out: *mut f32,
}

/// The scores of a block of rows against transposed keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scores {
    /// Block `b` of transposed keys at `kt + (b - first) · chunks · 256` floats.
    pub kt: *const f32,
    /// The block at `kt`.
    pub first: usize,
    /// 16-float chunks per (padded) head.
    pub chunks: usize,
    /// Position of `scores[0]` of every row (a multiple of 16, at most every row's `lo`).
    pub base: usize,
}

/// The values a block of rows sums over.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Values {
    /// Position `t`'s value vector at element `t · ldv` from `v`.
    pub v: *const u8,
    /// How the values are stored (widened to `f32` exactly as they are loaded).
    pub dtype: Dtype,
    /// Elements between positions.
    pub ldv: usize,
    /// Width of a head.
    pub d: usize,
    /// How many positions ahead the sums ask for values (`0`: none, the values are in cache).
    pub ahead: usize,
}

/// Every row's scores `scores[t - base] = reference_dot(q, k_t)` for the key blocks covering
/// `lo..hi` (and possibly a few positions either side, which the caller ignores).
///
/// # Safety
/// Every row's `q` is readable for `chunks · 16` floats and its `scores` writable for the
/// blocks covering `base..hi` rounded up to 16; `kt` holds those blocks; rows are sorted by
/// position (`lo` and `hi` nondecreasing); `L`'s features are enabled.
#[inline(always)]
pub(super) unsafe fn scores<L: Lanes>(rows: &[AttnRow], s: &Scores) {
    // SAFETY: our caller meets this function's contract; every group of
    // rows and block range `b0..b1` passed on lies within the sorted rows' `lo..hi` covering
    // blocks, which is what `scores_rows` requires.
    unsafe {
        let Some(last) = rows.last() else { return };
        // A few key blocks at a time (about 16 KiB: they stay in L1), each read by every row.
        let step = (PASS_BYTES / (s.chunks * LANES * LANES * 4)).max(1);
        let (b_lo, b_hi) = (rows[0].lo / LANES, last.hi.div_ceil(LANES));
        let mut p0 = b_lo;
        while p0 < b_hi {
            let p1 = (p0 + step).min(b_hi);
            let mut j = 0;
            while j < rows.len() {
                let r = L::ATTN_ROWS.min(rows.len() - j);
                let group = &rows[j..j + r];
                // Sorted rows: the union of their ranges runs from the first `lo` to the last
                // `hi`.
                let b0 = (group[0].lo / LANES).max(p0);
                let b1 = group[r - 1].hi.div_ceil(LANES).min(p1);
                // Heads of 64 and 128 (4 and 8 chunks) get their chunk loop unrolled in full
                // tiles.
                match (r, s.chunks) {
                    (1, _) => scores_rows::<L, 1, 0>(group, s, b0, b1),
                    (2, _) => scores_rows::<L, 2, 0>(group, s, b0, b1),
                    (3, _) => scores_rows::<L, 3, 0>(group, s, b0, b1),
                    (4, 4) => scores_rows::<L, 4, 4>(group, s, b0, b1),
                    (4, _) => scores_rows::<L, 4, 0>(group, s, b0, b1),
                    (5, 4) => scores_rows::<L, 5, 4>(group, s, b0, b1),
                    (5, 8) => scores_rows::<L, 5, 8>(group, s, b0, b1),
                    (5, _) => scores_rows::<L, 5, 0>(group, s, b0, b1),
                    (other, _) => unreachable!("no score tile for {other} rows"),
                }
                j += r;
            }
            p0 = p1;
        }
    }
}

/// Bytes of keys or values one pass of the row tiles goes over (kept in L1).
const PASS_BYTES: usize = 16 * 1024;

/// Key blocks `b0..b1` for the rows of one register tile.
///
/// # Safety
/// `L`'s features are enabled; `rows` has `R` rows whose `q` is readable for
/// `s.chunks · 16` floats and whose `scores` is writable at `b · 16 - s.base` for 16 floats
/// for every block `b` in `b0..b1`; `s.kt` holds blocks `b0..b1` (from `s.first`).
#[inline(always)]
unsafe fn scores_rows<L: Lanes, const R: usize, const C: usize>(
    rows: &[AttnRow],
    s: &Scores,
    b0: usize,
    b1: usize,
) {
    // SAFETY: our caller guarantees `kt` holds blocks `b0..b1` and every
    // row's `scores` is writable for them, so the block pointer and the 16-float store at
    // `b · 16 - base` are in bounds; `s1` reads each `q` for `chunks · 16` floats.
    unsafe {
        let q: [*const f32; R] = std::array::from_fn(|r| rows[r].q);
        for b in b0..b1 {
            let kt = s.kt.add((b - s.first) * s.chunks * LANES * LANES);
            let sums = s1::<L, R, C>(&q, kt, s.chunks);
            for (row, v) in rows.iter().zip(sums) {
                L::store(row.scores.add(b * LANES - s.base), v);
            }
        }
    }
}

/// `A_l` for every row: lane `l`'s chain of [`crate::reference_dot`] for the 16 keys of a
/// block.
///
/// # Safety
/// `L`'s features are enabled; `kt` is readable for `chunks · 256` floats and every `q`
/// for `chunks · 16` floats; `l < 16`; `C` is `0` or `chunks`.
#[inline(always)]
unsafe fn lane<L: Lanes, const R: usize, const C: usize>(
    q: &[*const f32; R],
    kt: *const f32,
    chunks: usize,
    l: usize,
) -> [L::V; R] {
    // SAFETY: our caller guarantees every `q` row is readable for `chunks · 16`
    // floats and `kt` for `chunks · 256` (so index `i · 16` plus 16 lanes is in bounds);
    // `C`, when not 0, equals `chunks`.
    unsafe {
        let mut acc = [L::zero(); R];
        // `C` is the chunk count when known at compile time (0: run time).
        let chunks = if C > 0 { C } else { chunks };
        for c in 0..chunks {
            let i = c * LANES + l;
            let k = L::load(kt.add(i * LANES));
            for (a, &qr) in acc.iter_mut().zip(q) {
                *a = L::fma(L::splat(*qr.add(i)), k, *a);
            }
        }
        acc
    }
}

/// # Safety
/// `L`'s features are enabled.
#[inline(always)]
unsafe fn add<L: Lanes, const R: usize>(a: [L::V; R], b: [L::V; R]) -> [L::V; R] {
    // SAFETY: only `L::add`, which needs `L`'s features, enabled by our caller.
    unsafe { std::array::from_fn(|r| L::add(a[r], b[r])) }
}

/// The tree of [`crate::reference_dot`], level by level: `S8_l = A_l + A_{l+8}`, …
///
/// # Safety
/// As `lane`, with `l < 8` (lanes `l` and `l + 8`).
#[inline(always)]
unsafe fn s8<L: Lanes, const R: usize, const C: usize>(
    q: &[*const f32; R],
    kt: *const f32,
    c: usize,
    l: usize,
) -> [L::V; R] {
    // SAFETY: our caller's contract is `lane`'s, and the lanes asked for stay
    // below 16.
    unsafe {
        add::<L, R>(
            lane::<L, R, C>(q, kt, c, l),
            lane::<L, R, C>(q, kt, c, l + 8),
        )
    }
}

/// # Safety
/// As `lane`, with `l < 4` (lanes `l + 4j`).
#[inline(always)]
unsafe fn s4<L: Lanes, const R: usize, const C: usize>(
    q: &[*const f32; R],
    kt: *const f32,
    c: usize,
    l: usize,
) -> [L::V; R] {
    // SAFETY: our caller's contract is `s8`'s, and the lanes asked for stay
    // below 16.
    unsafe { add::<L, R>(s8::<L, R, C>(q, kt, c, l), s8::<L, R, C>(q, kt, c, l + 4)) }
}

/// # Safety
/// As `lane`, with `l < 2` (lanes `l + 2j`).
#[inline(always)]
unsafe fn s2<L: Lanes, const R: usize, const C: usize>(
    q: &[*const f32; R],
    kt: *const f32,
    c: usize,
    l: usize,
) -> [L::V; R] {
    // SAFETY: our caller's contract is `s4`'s, and the lanes asked for stay
    // below 16.
    unsafe { add::<L, R>(s4::<L, R, C>(q, kt, c, l), s4::<L, R, C>(q, kt, c, l + 2)) }
}

/// # Safety
/// As `lane`, for all 16 lanes.
#[inline(always)]
unsafe fn s1<L: Lanes, const R: usize, const C: usize>(
    q: &[*const f32; R],
    kt: *const f32,
    c: usize,
) -> [L::V; R] {
    // SAFETY: our caller's contract is `s2`'s, and the lanes asked for stay
    // below 16.
    unsafe { add::<L, R>(s2::<L, R, C>(q, kt, c, 0), s2::<L, R, C>(q, kt, c, 1)) }
}

/// Adds `Σ_t scores[t - base] · v_t` over each row's `lo..hi` to its `out`, one chain per
/// output element in increasing `t`.
///
/// # Safety
/// Every row's `scores` is readable for `lo - base..hi - base`, its `out` readable and
/// writable for `d` floats (and no other row's); the value vectors of `lo..hi` are readable;
/// rows are sorted by position; `L`'s features are enabled.
#[inline(always)]
pub(super) unsafe fn weighted_sums<L: Lanes>(rows: &[AttnRow], base: usize, v: &Values) {
    // SAFETY: our caller meets this function's contract, and `E` is chosen to
    // match `v.dtype`, as `sums_of` requires.
    unsafe {
        match v.dtype {
            Dtype::F32 => sums_of::<L, F32>(rows, base, v),
            Dtype::Bf16 => sums_of::<L, Bf16>(rows, base, v),
            Dtype::F16 => sums_of::<L, F16>(rows, base, v),
        }
    }
}

/// [`weighted_sums`] over values stored as `E`.
///
/// # Safety
/// As [`weighted_sums`], with `E::DTYPE == v.dtype`.
#[inline(always)]
unsafe fn sums_of<L: Lanes, E: Elem>(rows: &[AttnRow], base: usize, v: &Values) {
    // SAFETY: our caller meets `weighted_sums`' contract with `E` for
    // `v.dtype`; every `sum_rows` call covers a subrange of its rows' `lo..hi` (clipped to the
    // run `p0..p1`), so its reads of scores and values and its writes of `out` are in bounds.
    unsafe {
        let Some(last) = rows.last() else { return };
        // A run of positions at a time (about 16 KiB of values: they stay in L1), each row
        // taking its part of the run; runs go in increasing order, so every chain does too.
        let step = (PASS_BYTES / (v.d.max(1) * E::DTYPE.size())).max(LANES);
        let mut p0 = rows[0].lo;
        while p0 < last.hi {
            let p1 = (p0 + step).min(last.hi);
            let part = |row: &AttnRow| (row.lo.max(p0), row.hi.min(p1));
            let mut j = 0;
            while j < rows.len() {
                let r = L::ATTN_ROWS.min(rows.len() - j);
                let group = &rows[j..j + r];
                // The part every row of the group sees; before and after it each row goes alone.
                let (lo, hi) = (part(&group[r - 1]).0, part(&group[0]).1);
                if lo >= hi {
                    for row in group {
                        let (a, b) = part(row);
                        sum_rows::<L, E, 1>(&[*row], a, b, base, v);
                    }
                } else {
                    for row in group {
                        sum_rows::<L, E, 1>(&[*row], part(row).0, lo, base, v);
                    }
                    match r {
                        1 => sum_rows::<L, E, 1>(group, lo, hi, base, v),
                        2 => sum_rows::<L, E, 2>(group, lo, hi, base, v),
                        3 => sum_rows::<L, E, 3>(group, lo, hi, base, v),
                        4 => sum_rows::<L, E, 4>(group, lo, hi, base, v),
                        5 => sum_rows::<L, E, 5>(group, lo, hi, base, v),
                        other => unreachable!("no sum tile for {other} rows"),
                    }
                    for row in group {
                        sum_rows::<L, E, 1>(&[*row], hi, part(row).1, base, v);
                    }
                }
                j += r;
            }
            p0 = p1;
        }
    }
}

/// Positions `t0..t1` of `R` rows' weighted sums, four vectors (64 outputs) at a time.
///
/// # Safety
/// `L`'s features are enabled; `rows` has `R` rows, `t0..t1` lies within every row's
/// `lo..hi`, and the rows' `scores`, `out` and the values meet [`weighted_sums`]' contract
/// over it.
#[inline(always)]
unsafe fn sum_rows<L: Lanes, E: Elem, const R: usize>(
    rows: &[AttnRow],
    t0: usize,
    t1: usize,
    base: usize,
    v: &Values,
) {
    // SAFETY: `t0..t1` lies within every row's `lo..hi`, so `scores + t0 - base`
    // and the values at `t0 · ldv` are in bounds (our caller's contract), and `block` gets
    // `d` outputs in chunks of at most 16 that stay below `d`.
    unsafe {
        if t0 >= t1 {
            return;
        }
        let e: [*const f32; R] =
            std::array::from_fn(|r| rows[r].scores.cast_const().add(t0 - base));
        let out: [*mut f32; R] = std::array::from_fn(|r| rows[r].out);
        let size = E::DTYPE.size();
        let vals = v.v.add(t0 * v.ldv * size);
        let mut i0 = 0;
        while i0 + 4 * LANES <= v.d {
            let at = vals.add(i0 * size);
            block::<L, E, R, 4>(&e, t1 - t0, at, v.ldv, &out, i0, LANES, v.ahead);
            i0 += 4 * LANES;
        }
        while i0 < v.d {
            let len = (v.d - i0).min(LANES);
            let at = vals.add(i0 * size);
            block::<L, E, R, 1>(&e, t1 - t0, at, v.ldv, &out, i0, len, v.ahead);
            i0 += len;
        }
    }
}

/// `Q` vectors of outputs `i0..` for `R` rows over `nt` positions (values of type `E`, `ldv`
/// elements apart; the last vector `len` lanes wide), asking for the values `ahead`
/// positions on (none when `0`).
///
/// # Safety
/// `L`'s features are enabled; each `e[r]` is readable for `nt` floats; each `out[r]` is
/// readable and writable (by this call alone) for floats `i0..i0 + (Q - 1) · 16 + len`; for
/// `t < nt` the values at `v + t · ldv · size` are readable for `(Q - 1) · 16 + len`
/// elements of `E`; `len <= 16`, and `len < 16` only when `Q == 1`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn block<L: Lanes, E: Elem, const R: usize, const Q: usize>(
    e: &[*const f32; R],
    nt: usize,
    v: *const u8,
    ldv: usize,
    out: &[*mut f32; R],
    i0: usize,
    len: usize,
    ahead: usize,
) {
    // SAFETY: our caller guarantees every `e` is readable for `nt` floats, every
    // `out` row for `i0 + Q · 16` floats (the last vector `len` wide), and values `t < nt` for
    // `Q · 16` elements from `v + t · ldv · size` (or `len` when partial); prefetches are hints
    // and may point past the values.
    unsafe {
        let mut acc = [[L::zero(); Q]; R];
        for (a, &o) in acc.iter_mut().zip(out) {
            for (q, aq) in a.iter_mut().enumerate() {
                *aq = load::<L>(o.add(i0 + q * LANES), len);
            }
        }
        let size = E::DTYPE.size();
        for t in 0..nt {
            let row = v.add(t * ldv * size);
            if ahead > 0 {
                // At most one cache line per vector; a prefetch past the cache reads nothing.
                for q in 0..Q {
                    L::prefetch(row.wrapping_add((ahead * ldv + q * LANES) * size));
                }
            }
            let mut vt = [L::zero(); Q];
            for (q, x) in vt.iter_mut().enumerate() {
                let at = row.add(q * LANES * size);
                *x = if len == LANES {
                    E::load::<L>(at)
                } else {
                    E::load_part::<L>(at, len)
                };
            }
            for (a, &er) in acc.iter_mut().zip(e) {
                let et = L::splat(*er.add(t));
                for (aq, &x) in a.iter_mut().zip(&vt) {
                    *aq = L::fma(et, x, *aq);
                }
            }
        }
        for (a, &o) in acc.iter().zip(out) {
            for (q, &aq) in a.iter().enumerate() {
                if len == LANES {
                    L::store(o.add(i0 + q * LANES), aq);
                } else {
                    L::store_part(o.add(i0 + q * LANES), aq, len);
                }
            }
        }
    }
}

/// The first `len <= 16` floats at `p`, the other lanes zero.
///
/// # Safety
/// `L`'s features are enabled; `len <= 16` and `p` is readable for `len` floats.
#[inline(always)]
unsafe fn load<L: Lanes>(p: *const f32, len: usize) -> L::V {
    // SAFETY: our caller guarantees `p` readable for `len <= 16` floats: `L::load`
    // when `len == 16`, `L::load_part` otherwise.
    unsafe {
        if len == LANES {
            L::load(p)
        } else {
            L::load_part(p, len)
        }
    }
}
