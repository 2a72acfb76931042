//! Threshold scans over logits: the positions at or above a threshold, block by block, with
//! AVX2 kernels on x86-64-v3 builds.

use alloc::vec::Vec;

/// Values per block of [`scan_at_least`] and [`positions_at_least`].
pub const SCAN_BLOCK: usize = 64;

/// Appends `base + i` to `out` for every `i` with `xs[i] >= t`, in order (`xs` at most
/// `u32::MAX` long).
///
/// With AVX2 (x86-64-v3 builds) a block of 32 values without a hit costs one fold of their
/// maximum and one compare; in a block with hits, each group of 8 is packed without a branch
/// (the positions of its hits moved to the front of a vector by a shuffle from a table,
/// stored, the end advanced by their count), so many hits cost no mispredicted branches
/// either. Elsewhere a portable loop gives the same positions.
#[allow(unsafe_code)] // the AVX2 kernel below; the portable loop is safe code
pub fn positions_at_least(xs: &[f32], t: f32, base: u32, out: &mut Vec<u32>) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    {
        // SAFETY: compiled only when the whole build targets AVX2, as for `scan_at_least`.
        unsafe { avx2::positions_at_least(xs, t, base, out) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    scan_at_least(xs, t, |positions| {
        out.extend(positions.iter().map(|&i| base.wrapping_add(i)));
        t
    });
}

/// Scans `xs` (at most `u32::MAX` long) for values at or above a threshold, a block of
/// [`SCAN_BLOCK`] at a time: for each block holding one, calls `on_hits(positions)` with the
/// positions in `xs` of the block's values at or above the current threshold, increasing;
/// `on_hits` returns the threshold for the rest of the scan (a running top-k raises it).
///
/// With AVX2 (x86-64-v3 builds) a block without a hit costs one fold of its maximum and one
/// compare, and a block with hits has them packed without a branch (as in
/// [`positions_at_least`]), so a scan runs at about the speed of reading plus one call per
/// block with hits; elsewhere a portable loop makes the same calls.
#[allow(unsafe_code)] // the AVX2 kernel below; the portable loop is safe code
pub fn scan_at_least(xs: &[f32], threshold: f32, mut on_hits: impl FnMut(&[u32]) -> f32) {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    {
        // SAFETY: this branch is compiled only when the whole build targets AVX2
        // (`target_feature = "avx2"`), so the CPU running it has the instructions.
        unsafe { avx2::scan_at_least(xs, threshold, &mut on_hits) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    {
        let mut t = threshold;
        let mut hits = [0u32; SCAN_BLOCK];
        for (b, block) in xs.chunks(SCAN_BLOCK).enumerate() {
            let mut n = 0;
            for (j, &x) in block.iter().enumerate() {
                hits[n] = (b * SCAN_BLOCK + j) as u32;
                n += usize::from(x >= t);
            }
            if n > 0 {
                t = on_hits(&hits[..n]);
            }
        }
    }
}

/// [`scan_at_least`] that also checks `xs`: returns whether no value is NaN or `+inf` (`-inf`
/// is fine), so that a row is checked and scanned in one read. `on_hits` may be handed the
/// position of a `+inf` (it is at or above any threshold), never a NaN's.
///
/// The check rides on lane sums, as in [`max_if_clean`](super::max_if_clean): a NaN makes
/// them NaN and a `+inf` makes them `+inf` or NaN, while finite values and `-inf` keep them
/// below `+inf` or at `-inf`; only finite values whose sum overflows raise a false alarm,
/// which a second, exact read then clears.
#[allow(unsafe_code)] // the AVX2 kernel below; the portable loop is safe code
pub fn scan_at_least_checked(
    xs: &[f32],
    threshold: f32,
    mut on_hits: impl FnMut(&[u32]) -> f32,
) -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    // SAFETY: compiled only when the whole build targets AVX2, as for `scan_at_least`.
    let total = unsafe { avx2::scan_at_least_summed(xs, threshold, &mut on_hits) };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    let total = {
        let mut sums = [0.0f32; SCAN_BLOCK];
        let mut t = threshold;
        let mut hits = [0u32; SCAN_BLOCK];
        for (b, block) in xs.chunks(SCAN_BLOCK).enumerate() {
            let mut n = 0;
            for (j, &x) in block.iter().enumerate() {
                sums[j] += x;
                hits[n] = (b * SCAN_BLOCK + j) as u32;
                n += usize::from(x >= t);
            }
            if n > 0 {
                t = on_hits(&hits[..n]);
            }
        }
        sums.iter().fold(0.0f32, |s, &x| s + x)
    };
    let clean = total < f32::INFINITY || total == f32::NEG_INFINITY;
    clean || xs.iter().all(|&x| x < f32::INFINITY)
}

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
#[allow(unsafe_code)] // the documented vectorized kernels: unaligned loads and stores in bounds
mod avx2 {
    use super::SCAN_BLOCK;
    use alloc::vec::Vec;
    use core::arch::x86_64::{
        __m128i, __m256, __m256i, _mm256_add_epi32, _mm256_add_ps, _mm256_cmp_ps,
        _mm256_cvtepu8_epi32, _mm256_loadu_ps, _mm256_max_ps, _mm256_movemask_ps,
        _mm256_permutevar8x32_epi32, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32,
        _mm256_setzero_ps, _mm256_storeu_ps, _mm256_storeu_si256, _mm_loadl_epi64, _CMP_GE_OQ,
        _CMP_NLT_UQ,
    };

    /// For each 8-bit mask, the indices of its set bits in increasing order, then zeros: the
    /// shuffle that packs a group's hits to the front.
    static PACK: [[u8; 8]; 256] = {
        let mut table = [[0u8; 8]; 256];
        let mut mask = 0;
        while mask < 256 {
            let (mut bit, mut k) = (0, 0);
            while bit < 8 {
                if mask & (1 << bit) != 0 {
                    table[mask][k] = bit as u8;
                    k += 1;
                }
                bit += 1;
            }
            mask += 1;
        }
        table
    };

    /// The 8 values at `p` compared with `tv`: all ones where `≥`.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `p` must point to 8 readable `f32`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn ge8(p: *const f32, tv: __m256) -> __m256 {
        // SAFETY: the caller's promise.
        _mm256_cmp_ps::<_CMP_GE_OQ>(unsafe { _mm256_loadu_ps(p) }, tv)
    }

    /// Values per block of [`positions_at_least`]: fewer than [`SCAN_BLOCK`], as with many hits
    /// every block is packed and a smaller one packs fewer groups without hits.
    const PACK_BLOCK: usize = 32;

    /// Whether any of the `B` values at `p` may be `≥ tv`: their maximum, folded from
    /// the last group to the first, compared once. `_mm256_max_ps(a, b)` returns `b` when
    /// either is NaN, so a NaN in the last group reaches the maximum (and counts as a
    /// possible hit, which the exact per-group compares then reject) while any other NaN is
    /// passed over: a block with a value `≥ tv` is never missed.
    ///
    /// # Safety
    /// The CPU must support AVX2, and `p` must point to `B` readable `f32` (`B` a multiple of
    /// 8).
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn any_ge<const B: usize>(p: *const f32, tv: __m256) -> bool {
        // SAFETY: the caller's promise; every `p + 8g` (g < B / 8) starts 8 readable `f32`.
        let load = |g: usize| unsafe { _mm256_loadu_ps(p.add(8 * g)) };
        let groups = B / 8;
        let mut max = load(groups - 1);
        for g in (0..groups - 1).rev() {
            max = _mm256_max_ps(load(g), max);
        }
        _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NLT_UQ>(max, tv)) != 0
    }

    /// Writes `first + j` for each `j` with `p[j] ≥ tv` (`j < B`), in order, from `dst` on,
    /// and returns how many: per group of 8, one compare, a shuffle from [`PACK`], one store
    /// of 8, no branch. Up to `B` slots from `dst` are written, garbage past the count.
    ///
    /// # Safety
    /// The CPU must support AVX2, `p` must point to `B` readable `f32` (`B` a multiple of 8),
    /// and `dst` to `B` writable `u32`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn pack<const B: usize>(p: *const f32, first: u32, tv: __m256, dst: *mut u32) -> usize {
        let iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut n = 0;
        for g in (0..B).step_by(8) {
            // SAFETY: the caller's promise: `p + g` starts 8 readable `f32`; `n + 8 ≤ g + 8 ≤
            // B`, so the 8 `u32` stored at `dst + n` are writable; `PACK[mask]` is 8 bytes.
            unsafe {
                let mask = _mm256_movemask_ps(ge8(p.add(g), tv)) as usize;
                let at =
                    _mm256_add_epi32(_mm256_set1_epi32(first.wrapping_add(g as u32) as i32), iota);
                let order = _mm_loadl_epi64(PACK[mask].as_ptr().cast::<__m128i>());
                let packed = _mm256_permutevar8x32_epi32(at, _mm256_cvtepu8_epi32(order));
                _mm256_storeu_si256(dst.add(n).cast::<__m256i>(), packed);
                n += mask.count_ones() as usize;
            }
        }
        n
    }

    /// See [`super::positions_at_least`].
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn positions_at_least(xs: &[f32], t: f32, base: u32, out: &mut Vec<u32>) {
        let tv = _mm256_set1_ps(t);
        let p = xs.as_ptr();
        let whole = xs.len() / PACK_BLOCK * PACK_BLOCK;
        for i in (0..whole).step_by(PACK_BLOCK) {
            // SAFETY: `i + PACK_BLOCK <= whole <= xs.len()`: the block lies within `xs`; the
            // reserve makes room for `pack`'s writes past the end; `set_len` keeps the old
            // elements and the hits just written.
            unsafe {
                if any_ge::<PACK_BLOCK>(p.add(i), tv) {
                    out.reserve(PACK_BLOCK);
                    let len = out.len();
                    let n = pack::<PACK_BLOCK>(
                        p.add(i),
                        base.wrapping_add(i as u32),
                        tv,
                        out.as_mut_ptr().add(len),
                    );
                    out.set_len(len + n);
                }
            }
        }
        for (j, &x) in xs.iter().enumerate().skip(whole) {
            if x >= t {
                out.push(base.wrapping_add(j as u32));
            }
        }
    }

    /// See [`super::scan_at_least`].
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan_at_least(
        xs: &[f32],
        threshold: f32,
        on_hits: &mut impl FnMut(&[u32]) -> f32,
    ) {
        let mut t = threshold;
        let mut tv = _mm256_set1_ps(t);
        let mut hits = [0u32; SCAN_BLOCK];
        let p = xs.as_ptr();
        let whole = xs.len() / SCAN_BLOCK * SCAN_BLOCK;
        for i in (0..whole).step_by(SCAN_BLOCK) {
            // SAFETY: `i + SCAN_BLOCK <= whole <= xs.len()`: the block lies within `xs`, and
            // `hits` holds SCAN_BLOCK slots.
            unsafe {
                if any_ge::<SCAN_BLOCK>(p.add(i), tv) {
                    // None after all if the block's possible hit was a NaN.
                    let n = pack::<SCAN_BLOCK>(p.add(i), i as u32, tv, hits.as_mut_ptr());
                    if n > 0 {
                        t = on_hits(&hits[..n]);
                        tv = _mm256_set1_ps(t);
                    }
                }
            }
        }
        let mut n = 0;
        for (j, &x) in xs.iter().enumerate().skip(whole) {
            hits[n] = j as u32;
            n += usize::from(x >= t);
        }
        if n > 0 {
            on_hits(&hits[..n]);
        }
    }

    /// Blocks of [`scan_at_least_summed`] read before their hits are handled: the reading
    /// loop makes no call, so its sums stay in registers.
    const CHUNK_BLOCKS: usize = 16;

    /// See [`super::scan_at_least_checked`]: [`scan_at_least`]'s blocks, read a chunk of
    /// [`CHUNK_BLOCKS`] at a time into eight lane sums (one per group of a block, so no add
    /// waits for another) and a mask of the blocks that may hold a hit, whose hits are then
    /// handled; returns the total of the sums and the tail. A block flagged under a threshold
    /// that `on_hits` has raised since is packed under the new one, which finds exactly its
    /// hits.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan_at_least_summed(
        xs: &[f32],
        threshold: f32,
        on_hits: &mut impl FnMut(&[u32]) -> f32,
    ) -> f32 {
        const GROUPS: usize = SCAN_BLOCK / 8;
        let mut t = threshold;
        let mut tv = _mm256_set1_ps(t);
        let mut sums = [_mm256_setzero_ps(); GROUPS];
        let mut hits = [0u32; SCAN_BLOCK];
        let p = xs.as_ptr();
        let whole = xs.len() / SCAN_BLOCK * SCAN_BLOCK;
        let mut chunk = 0;
        while chunk < whole {
            let end = whole.min(chunk + CHUNK_BLOCKS * SCAN_BLOCK);
            let mut flagged = 0u32;
            for (b, i) in (chunk..end).step_by(SCAN_BLOCK).enumerate() {
                // SAFETY: `i + SCAN_BLOCK <= end <= whole <= xs.len()`: the block lies within
                // `xs`.
                let load = |g: usize| unsafe { _mm256_loadu_ps(p.add(i + 8 * g)) };
                let mut v = [_mm256_setzero_ps(); GROUPS];
                for (g, (v, sum)) in v.iter_mut().zip(&mut sums).enumerate() {
                    *v = load(g);
                    *sum = _mm256_add_ps(*sum, *v);
                }
                // The block's maximum as a tree, three maxima deep rather than a chain of
                // eight. As in `any_ge`, a NaN may reach it and flag the block, whose exact
                // compares in `pack` then reject it.
                let pairs = [0, 2, 4, 6].map(|g| _mm256_max_ps(v[g], v[g + 1]));
                let max = _mm256_max_ps(
                    _mm256_max_ps(pairs[0], pairs[1]),
                    _mm256_max_ps(pairs[2], pairs[3]),
                );
                let maybe = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NLT_UQ>(max, tv)) != 0;
                flagged |= u32::from(maybe) << b;
            }
            while flagged != 0 {
                let i = chunk + flagged.trailing_zeros() as usize * SCAN_BLOCK;
                flagged &= flagged - 1;
                // SAFETY: a flagged block lies within `xs` (above), and `hits` holds
                // SCAN_BLOCK slots.
                let n = unsafe { pack::<SCAN_BLOCK>(p.add(i), i as u32, tv, hits.as_mut_ptr()) };
                if n > 0 {
                    t = on_hits(&hits[..n]);
                    tv = _mm256_set1_ps(t);
                }
            }
            chunk = end;
        }
        let mut lanes = [0.0f32; SCAN_BLOCK];
        for (g, sum) in sums.iter().enumerate() {
            // SAFETY: `lanes[8 * g..]` holds 8 writable `f32` (`g < GROUPS`).
            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr().add(8 * g), *sum) };
        }
        let mut n = 0;
        let mut total = lanes.iter().fold(0.0f32, |s, &x| s + x);
        for (j, &x) in xs.iter().enumerate().skip(whole) {
            total += x;
            hits[n] = j as u32;
            n += usize::from(x >= t);
        }
        if n > 0 {
            on_hits(&hits[..n]);
        }
        total
    }
}
