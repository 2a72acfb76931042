//! The loops shared by every instruction set: register tiles of `R` rows × `C` columns of
//! 16-lane accumulators, the column loop, prefill's weight panels, and the weighted sum of
//! attention.
//!
//! Every accumulator `(r, c)` sees exactly [`crate::reference_dot`]'s steps: `+0.0`, then one
//! `fma(x chunk, w chunk, acc)` per 16-wide chunk in increasing order (the last one zero-padded),
//! then the lane tree. Tile shapes, panels and packing only change *when* an accumulator is
//! updated, never its sequence of operations, so the result of a row is independent of the
//! other rows, of the columns beside it and of the instruction set.

use super::{Bf16, Elem, Gemm, Lanes, F16, F32};
use crate::{Dtype, LANES};

/// Bytes of widened weights prefill keeps per panel (a panel is reused from L2 by every row
/// tile).
const PANEL_BYTES: usize = 256 * 1024;
/// Bytes of rows prefill streams past one group of weight columns (kept in L2).
const ROW_BLOCK_BYTES: usize = 512 * 1024;
/// Bytes of packed weights a row tile goes through before the next row tile (kept in L1
/// beside the row tile).
const PASS_BYTES: usize = 28 * 1024;
/// Bytes of a cache line.
const LINE_BYTES: usize = 64;
/// Alignment of prefill's buffers (a cache line: whole-line loads).
const ALIGN_FLOATS: usize = 16;

/// One block of rows against a run of weight columns: `out[r * ldo + c] = dot(x[r], w[c]) +
/// bias[c]`.
///
/// Column `c`'s weights start at `w + (c / group) * gstride + (c % group) * ldw` bytes and its
/// 16-wide chunks are `cstride` bytes apart: a plain row-major weight has `group = usize::MAX`,
/// `ldw` = its row length and `cstride = 16 · size`; prefill's packed panel interleaves the
/// chunks of `group` columns.
pub(crate) struct Tile {
    x: *const f32,
    ldx: usize,
    k: usize,
    w: *const u8,
    ldw: usize,
    group: usize,
    gstride: usize,
    cstride: usize,
    bias: *const f32,
    out: *mut f32,
    ldo: usize,
    /// See [`super::Gemm::ahead_cols`] (plain weights only).
    ahead_cols: usize,
}

impl Tile {
    /// The first weight byte of column `c`.
    ///
    /// # Safety
    /// Column `c` is one of the tile's columns (its weights lie inside the allocation `w`
    /// points into).
    #[inline(always)]
    unsafe fn col(&self, c: usize) -> *const u8 {
        // SAFETY: our caller guarantees column `c` exists in the tile, so the
        // offset stays inside the weight allocation `w` points into.
        unsafe {
            self.w
                .add((c / self.group) * self.gstride + (c % self.group) * self.ldw)
        }
    }
}

/// Columns `j0..j1` of `g`, every row. The generic body of each instruction set's entry point.
///
/// # Safety
/// As [`super::gemm_cols`], with `L`'s features enabled.
#[inline(always)]
pub(super) unsafe fn gemm_cols<L: Lanes>(g: &Gemm, j0: usize, j1: usize, scratch: &mut Vec<f32>) {
    // SAFETY: our caller meets `super::gemm_cols`' contract with `L`'s
    // features enabled, which is what `gemm_cols_of` requires.
    unsafe {
        match g.dtype {
            Dtype::F32 => gemm_cols_of::<L, F32>(g, j0, j1, scratch),
            Dtype::Bf16 => gemm_cols_of::<L, Bf16>(g, j0, j1, scratch),
            Dtype::F16 => gemm_cols_of::<L, F16>(g, j0, j1, scratch),
        }
    }
}

/// # Safety
/// As [`super::gemm_cols`] with `L`'s features enabled; `E::DTYPE == g.dtype`.
#[inline(always)]
unsafe fn gemm_cols_of<L: Lanes, E: Elem>(g: &Gemm, j0: usize, j1: usize, scratch: &mut Vec<f32>) {
    // SAFETY: our caller meets `super::gemm_cols`' contract with `L`'s features
    // enabled and `E` = `g.dtype`. So: the decode tile's pointers (`w + j0 · ldw`, `bias + j0`,
    // `out + j0`) and every row, column and chunk `L::rows` touches lie in the ranges the
    // contract makes readable or writable; `scratch` is resized to `panel_len + x_len +
    // ALIGN_FLOATS` floats, so the aligned `base` (at most 15 floats in) has room for the
    // panel (`panel_len`, which `pack` fills for at most `nc` columns) and the row copy
    // (`m · kp >= m · k`), and the two never overlap each other or `g.x`; each prefill tile's
    // `x`, `w`, `bias` and `out` address rows `r0..r0 + rows` and columns `p0 + c..` inside
    // those ranges; prefetches may point past the weights and are never dereferenced.
    unsafe {
        let size = E::DTYPE.size();
        if g.m <= L::DECODE_ROWS {
            // Decode: all rows in one pass over the weights as they are stored, each chunk loaded
            // (and widened) once.
            let tile = Tile {
                x: g.x,
                ldx: g.ldx,
                k: g.k,
                w: g.w.add(j0 * g.ldw),
                ldw: g.ldw,
                group: usize::MAX,
                gstride: 0,
                cstride: LANES * size,
                bias: if g.bias.is_null() {
                    g.bias
                } else {
                    g.bias.add(j0)
                },
                out: g.out.add(j0),
                ldo: g.ldo,
                ahead_cols: g.ahead_cols,
            };
            L::rows::<E>(g.m, &tile, j1 - j0);
            return;
        }
        // Prefill: the rows are copied once to an aligned, zero-padded buffer; then a panel of
        // `nc` weight columns is widened into an aligned buffer, the chunks of each `group` of
        // columns interleaved so a register tile reads one stream, and every block of rows goes
        // through the panel while it is in cache.
        let kp = g.k.div_ceil(LANES) * LANES;
        let group = L::PREFILL_COLS;
        let nc = (PANEL_BYTES / (kp * 4) / group).max(1) * group;
        let mb = (ROW_BLOCK_BYTES / (kp * 4) / L::PREFILL_ROWS).max(1) * L::PREFILL_ROWS;
        let panel_len = nc.div_ceil(group) * group * kp;
        let pass = (PASS_BYTES / (group * kp * 4)).max(1) * group;
        // Rows whose starts are already cache-line aligned are read in place (`matmul_nt` aligns
        // them once per call); others are copied once per call of this function.
        let aligned =
            g.ldx.is_multiple_of(LANES) && (g.x as usize).is_multiple_of(ALIGN_FLOATS * 4);
        let x_len = if aligned { 0 } else { g.m * kp };
        scratch.resize(panel_len + x_len + ALIGN_FLOATS, 0.0);
        let base = scratch.as_mut_ptr();
        let base = base.add(base.align_offset(ALIGN_FLOATS * 4));
        let panel = base;
        let (xbuf, ldx) = if aligned {
            (g.x, g.ldx)
        } else {
            let xbuf = base.add(panel_len);
            for r in 0..g.m {
                std::ptr::copy_nonoverlapping(g.x.add(r * g.ldx), xbuf.add(r * kp), g.k);
            }
            (xbuf.cast_const(), kp)
        };
        let mut p0 = j0;
        while p0 < j1 {
            let p1 = (p0 + nc).min(j1);
            pack::<L, E>(g.w.add(p0 * g.ldw), g.ldw, p1 - p0, g.k, group, panel);
            // While this panel computes, fetch the next one's weights (a few cache lines after
            // each register tile), so its packing reads them from L2 instead of waiting on memory.
            let next = (p1 + nc).min(j1) - p1;
            let mut fetch = g.w.add(p1 * g.ldw);
            let fetch_end = fetch.wrapping_add(next * g.ldw);
            let tiles = (p1 - p0).div_ceil(group) * g.m.div_ceil(L::PREFILL_ROWS);
            let per_tile = (next * g.ldw).div_ceil(LINE_BYTES).div_ceil(tiles.max(1));
            // A few groups of columns (`pass`) stay in L1 while a block of rows (kept in L2)
            // streams past them, each row tile going through every group of the pass while it
            // is in L1 too.
            let mut b0 = 0;
            while b0 < g.m {
                let b1 = (b0 + mb).min(g.m);
                let mut c0 = 0;
                while c0 < p1 - p0 {
                    let c1 = (c0 + pass).min(p1 - p0);
                    let mut r0 = b0;
                    while r0 < b1 {
                        let rows = L::PREFILL_ROWS.min(b1 - r0);
                        let mut c = c0;
                        while c < c1 {
                            let cols = group.min(c1 - c);
                            let tile = Tile {
                                x: xbuf.add(r0 * ldx),
                                ldx,
                                k: g.k,
                                w: panel.add((c / group) * group * kp).cast(),
                                ldw: LANES * 4,
                                group,
                                gstride: group * kp * 4,
                                cstride: group * LANES * 4,
                                bias: if g.bias.is_null() {
                                    g.bias
                                } else {
                                    g.bias.add(p0 + c)
                                },
                                out: g.out.add(r0 * g.ldo + p0 + c),
                                ldo: g.ldo,
                                ahead_cols: 0,
                            };
                            L::rows_packed(rows, &tile, cols);
                            for _ in 0..per_tile {
                                if fetch < fetch_end {
                                    L::prefetch(fetch);
                                    fetch = fetch.wrapping_add(LINE_BYTES);
                                }
                            }
                            c += cols;
                        }
                        r0 += rows;
                    }
                    c0 = c1;
                }
                b0 = b1;
            }
            p0 = p1;
        }
    }
}

/// Widens `cols` weight rows (stride `ldw` bytes, `k` elements) into `dst`: for each group of
/// `group` columns, chunk `i` of column `c` at `((g · kc + i) · group + c) · 16` floats, every
/// column zero-padded to `kc = ⌈k / 16⌉` chunks.
///
/// # Safety
/// `L`'s features are enabled; `w` is readable for `cols` rows of `k` elements of `E` at
/// stride `ldw` bytes; `dst` is writable for `⌈cols / group⌉ · group · ⌈k / 16⌉ · 16` floats
/// and overlaps nothing read.
#[inline(always)]
unsafe fn pack<L: Lanes, E: Elem>(
    w: *const u8,
    ldw: usize,
    cols: usize,
    k: usize,
    group: usize,
    dst: *mut f32,
) {
    // SAFETY: our caller guarantees the `cols` weight rows of `k` elements at
    // stride `ldw` are readable and `dst` writable for the packed panel, so every
    // `src + i · 16 · size` chunk (the last one `rem` elements) and every `col + …` store is in
    // bounds; `L`'s features are enabled.
    unsafe {
        let size = E::DTYPE.size();
        let (full, rem) = (k / LANES, k % LANES);
        let kc = k.div_ceil(LANES);
        for j in 0..cols {
            let src = w.add(j * ldw);
            let col = dst.add(((j / group) * kc * group + j % group) * LANES);
            for i in 0..full {
                L::store(
                    col.add(i * group * LANES),
                    E::load::<L>(src.add(i * LANES * size)),
                );
            }
            if rem > 0 {
                L::store(
                    col.add(full * group * LANES),
                    E::load_part::<L>(src.add(full * LANES * size), rem),
                );
            }
        }
    }
}

/// Columns `0..ncols` of `t` with `R` rows, `C` columns per register tile, and the rest in
/// tiles of 4, 2 and 1 columns (narrower than `C`), so a column range that is not a multiple
/// of `C` (a task's share) still loads each weight chunk for several columns at once.
///
/// # Safety
/// `L`'s features are enabled; `t` describes `R` rows and at least `ncols` columns whose
/// `x` rows (`k` floats at stride `ldx`), weight chunks (`⌈k / 16⌉` per column at stride
/// `cstride` from [`Tile::col`], the last `k % 16` elements long), `bias` (unless null) and
/// `out[r · ldo + c]` are readable or writable, with no other thread touching that `out`.
#[inline(always)]
pub(super) unsafe fn cols<L: Lanes, E: Elem, const R: usize, const C: usize>(
    t: &Tile,
    ncols: usize,
) {
    // SAFETY: `tile`'s contract for every column `c0..c0 + C' <= ncols` it is
    // called on is ours (below).
    unsafe {
        let mut c0 = 0;
        while c0 + C <= ncols {
            tile::<L, E, R, C>(t, c0);
            c0 += C;
        }
        if C > 4 && c0 + 4 <= ncols {
            tile::<L, E, R, 4>(t, c0);
            c0 += 4;
        }
        if C > 2 && c0 + 2 <= ncols {
            tile::<L, E, R, 2>(t, c0);
            c0 += 2;
        }
        while c0 < ncols {
            tile::<L, E, R, 1>(t, c0);
            c0 += 1;
        }
    }
}

/// The `R × C` register tile at columns `c0..c0 + C` of `t`.
///
/// # Safety
/// As [`cols`], for columns `c0..c0 + C` (all within the tile).
#[inline(always)]
unsafe fn tile<L: Lanes, E: Elem, const R: usize, const C: usize>(t: &Tile, c0: usize) {
    // SAFETY: our caller meets `cols`' contract and `c0 + C <= ncols`, so
    // `t.col(c0 + c)`, every chunk load (full chunks, then `rem` elements), every `x` row
    // load, `bias[c0 + c]` and `out[r · ldo + c0 + c]` are in bounds; prefetches are hints
    // and may point anywhere.
    unsafe {
        let mut w = [t.w; C];
        for (c, wc) in w.iter_mut().enumerate() {
            *wc = t.col(c0 + c);
        }
        let mut acc = [[L::zero(); C]; R];
        let (full, rem) = (t.k / LANES, t.k % LANES);
        // Each chunk: the `C` weight chunks are loaded (and widened) once and held, then each
        // row's chunk is loaded once and multiplied into its `C` accumulators.
        // Streaming weights (decode): fetch the rows of the next tile while this one computes.
        let ahead = match (t.group, t.ahead_cols) {
            (usize::MAX, 0) => C * t.ldw,
            (usize::MAX, cols) => cols * t.ldw,
            _ => 0,
        };
        for i in 0..full {
            let mut ws = [L::zero(); C];
            for (c, wc) in ws.iter_mut().enumerate() {
                *wc = E::load::<L>(w[c].add(i * t.cstride));
                if ahead > 0 {
                    L::prefetch(w[c].wrapping_add(ahead + i * t.cstride));
                }
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let xr = L::load(t.x.add(r * t.ldx + i * LANES));
                for (a, &wc) in row.iter_mut().zip(&ws) {
                    *a = L::fma(xr, wc, *a);
                }
            }
        }
        if rem > 0 {
            let mut ws = [L::zero(); C];
            for (c, wc) in ws.iter_mut().enumerate() {
                *wc = E::load_part::<L>(w[c].add(full * t.cstride), rem);
            }
            for (r, row) in acc.iter_mut().enumerate() {
                let xr = L::load_part(t.x.add(r * t.ldx + full * LANES), rem);
                for (a, &wc) in row.iter_mut().zip(&ws) {
                    *a = L::fma(xr, wc, *a);
                }
            }
        }
        // The lane trees, four accumulators at a time (row-major over the tile).
        let mut q = 0;
        while q < R * C {
            let at = |i: usize| ((q + i) / C, (q + i) % C);
            let mut v = [L::zero(); 4];
            for (i, vi) in v.iter_mut().enumerate() {
                if q + i < R * C {
                    let (r, c) = at(i);
                    *vi = acc[r][c];
                }
            }
            let sums = L::sum4(v);
            for (i, &s) in sums.iter().enumerate().take(R * C - q) {
                let (r, c) = at(i);
                let b = if t.bias.is_null() {
                    0.0
                } else {
                    *t.bias.add(c0 + c)
                };
                *t.out.add(r * t.ldo + c0 + c) = if t.bias.is_null() { s } else { s + b };
            }
            q += 4;
        }
    }
}

/// The `match` from a row count to the tile shapes of one instruction set:
/// `rows_table!(rows, tile, ncols, E; 1 => 8, 2 => 8, …)` runs `cols::<Self, E, R, C>`.
macro_rules! rows_table {
    ($rows:expr, $tile:expr, $ncols:expr, $e:ty; $($r:literal => $c:literal),+ $(,)?) => {
        match $rows {
            $($r => $crate::simd::driver::cols::<Self, $e, $r, $c>($tile, $ncols),)+
            other => unreachable!("no tile for {other} rows"),
        }
    };
}
pub(super) use rows_table;
