//! The decode path: one kv head per task, the scores of the query heads sharing it through
//! the matrix-product tiles, their weighted sums sharing each load of a value; and the softmax
//! numerators both paths use.

#[allow(unused_imports)]
use super::*;

/// A sequence's keys and values: positions before `split()` in `shared`, the rest in `own`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Runs<'a> {
    shared: KeysValues<'a>,
    own: KeysValues<'a>,
}

impl<'a> Runs<'a> {
    /// The runs of `seq`.
    pub(super) fn of(seq: &Sequence<'a>) -> Self {
        Runs {
            shared: seq.shared,
            own: seq.own,
        }
    }

    /// The first position of `own`.
    pub(super) fn split(&self) -> usize {
        self.shared.len
    }

    /// Writes kv head `kvh`'s key of position `t`, widened, into `row`.
    pub(super) fn key_into(&self, t: usize, kvh: usize, row: &mut [f32]) {
        match t.checked_sub(self.split()) {
            None => self.shared.widen_into(self.shared.keys, t, kvh, row),
            Some(t) => self.own.widen_into(self.own.keys, t, kvh, row),
        }
    }
}

/// Query rows per score product: a decode tile's rows.
pub(super) const SCORE_ROWS: usize = 8;
/// Positions per block of the score products: every block's keys stay in L1 while all the
/// task's rows take them.
pub(super) const SCORE_POSITIONS: usize = 64;

/// Scores `out[r · ldo + c] = reference_dot(q_r, k_c)` of the `m` packed rows `q` (`[m, d]`)
/// for `count` positions of one run, whose first position's kv head starts at `keys`
/// (`dtype` elements, `ld` of them per position).
///
/// # Safety
/// `isa` is available; `keys` is readable for `count` positions at stride `ld` (`d` elements
/// each); `out` is writable for `m` rows of `count` floats at stride `ldo` and nobody else
/// touches them.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn score_run(
    isa: Isa,
    q: &[f32],
    d: usize,
    keys: *const u8,
    dtype: Dtype,
    ld: usize,
    count: usize,
    out: *mut f32,
    ldo: usize,
) {
    let m = q.len() / d;
    let mut scratch = Vec::new();
    for c0 in (0..count).step_by(SCORE_POSITIONS) {
        let c1 = (c0 + SCORE_POSITIONS).min(count);
        for r0 in (0..m).step_by(SCORE_ROWS) {
            let g = Gemm {
                x: q[r0 * d..].as_ptr(),
                ldx: d,
                m: (m - r0).min(SCORE_ROWS),
                k: d,
                w: keys,
                ldw: ld * dtype.size(),
                dtype,
                bias: std::ptr::null(),
                // SAFETY: `r0 < m`, and `out` is writable for `m` rows at stride `ldo`.
                out: unsafe { out.add(r0 * ldo) },
                ldo,
                ahead_cols: PREFETCH_POSITIONS,
            };
            // SAFETY: `isa` is available; `q` holds rows `r0..r0 + g.m` of `d` floats; `keys`
            // is readable for positions `c0..c1 <= count` at `ldw` bytes each; `out` rows
            // `r0..r0 + g.m`, columns `c0..c1` are writable and ours alone (our contract).
            unsafe { simd::gemm_cols(isa, &g, c0, c1, &mut scratch) };
        }
    }
}

/// The run a part of [`sums_in`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// Each row's positions before `runs.split()`.
    Shared,
    /// Each row's positions from `runs.split()` on (every row sees some: its own position is
    /// one).
    Own,
}

/// Adds each row's weighted sum of the values of its positions in `run` (rows sorted by
/// position, `scores[t − base]` for their visible `t`). The shared part then the own part
/// make one chain per output element in increasing `t` across the runs: the chain of one run
/// alone.
///
/// # Safety
/// `isa` is available; the rows hold the contract of `simd::attn_sums` for the values of kv
/// head `kvh` of `runs`.
pub(super) unsafe fn sums_in(
    isa: Isa,
    run: Run,
    rows: &[AttnRow],
    base: usize,
    runs: &Runs<'_>,
    kvh: usize,
    ahead: usize,
) {
    let split = runs.split();
    let (part, base, values) = match run {
        Run::Shared => {
            let head = rows.iter().filter(|r| r.lo < split);
            let head = head.map(|r| AttnRow {
                hi: r.hi.min(split),
                ..*r
            });
            (head.collect::<Vec<_>>(), base, &runs.shared)
        }
        Run::Own => {
            // Positions renumbered from `split`: `scores'[t' − base']` is `scores[t − base]`.
            let from = base.max(split);
            let tail = rows.iter().map(|r| AttnRow {
                lo: r.lo.max(split) - split,
                hi: r.hi - split,
                // SAFETY: every row's `scores` covers `base..hi` (our `attn_sums` contract) and
                // its `hi` is past `split` (its own position is in the own run), so
                // `from - base < hi - base` stays inside it.
                scores: unsafe { r.scores.add(from - base) },
                ..*r
            });
            (tail.collect(), from - split, &runs.own)
        }
    };
    if part.is_empty() {
        return;
    }
    let v = Values {
        v: values.values_of(kvh),
        dtype: values.dtype,
        ldv: values.position_stride,
        d: values.head_dim,
        ahead,
    };
    // SAFETY: `isa` is available and the rows, clipped to `run`'s positions and renumbered
    // from its start, hold `attn_sums`' contract for its values (our contract).
    unsafe { simd::attn_sums(isa, &part, base, &v) };
}

/// One task of the decode path: the new rows `units` (`(sequence, row)` pairs, each
/// sequence's rows consecutive, all the sequences sharing one run) for kv head `kvh`, each
/// new row's `group` query heads of that kv head. The scores of all rows against the shared
/// run come from one pass over its keys, then each sequence's against its own run; the
/// softmax of each row over exactly its visible scores; then the weighted sums of all rows
/// over the shared values in one pass, and each sequence's over its own
/// ([`sums_in`]). Every score, exponential and chain is the one-row step's, so the
/// bits do not depend on who shares the task.
///
/// # Safety
/// `isa` is available; every sequence passed [`check`] and its output starts at `outs[j]`;
/// no one else reads or writes the outputs of these (row, kv head) pairs meanwhile.
pub(super) unsafe fn decode_task(
    isa: Isa,
    cfg: &Attention,
    seqs: &[Sequence<'_>],
    outs: &[SendPtr<f32>],
    units: &[(usize, usize)],
    kvh: usize,
) {
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    let (group, row) = (heads / kv_heads, heads * d);
    let m = units.len() * group;
    let mut q = Vec::with_capacity(m * d);
    // (sequence, position, output) of every query row, in the order of `q`.
    let mut rows = Vec::with_capacity(m);
    for &(j, i) in units {
        let seq = &seqs[j];
        q.extend_from_slice(&seq.queries[i * row + kvh * group * d..][..group * d]);
        for r in 0..group {
            // SAFETY: `outs[j]` is sequence `j`'s output of `new rows · heads · d` floats
            // (it passed `check`), and row `i`, head `kvh · group + r` lies inside it.
            let out = unsafe { outs[j].get().add(i * row + (kvh * group + r) * d) };
            rows.push((j, seq.past + i, out));
        }
    }
    let runs = Runs::of(&seqs[units[0].0]);
    let split = runs.split();
    let base = rows
        .iter()
        .map(|r| visible(cfg, r.1).start)
        .min()
        .unwrap_or(0);
    let ldo = rows.iter().map(|r| r.1 + 1).max().unwrap_or(0) - base;
    let mut scores = vec![0f32; m * ldo];
    let sp = scores.as_mut_ptr();
    if base < split {
        // SAFETY: `isa` is available; the shared run holds positions `base..split` of kv head
        // `kvh`; `scores` has `m` rows of `ldo >= split - base` floats, ours alone.
        unsafe {
            score_run(
                isa,
                &q,
                d,
                runs.shared.keys_from(base, kvh),
                runs.shared.dtype,
                runs.shared.position_stride,
                split - base,
                sp,
                ldo,
            )
        };
    }
    // Each sequence's rows (consecutive) against its own run.
    let per_sequence: Vec<(usize, std::ops::Range<usize>)> = rows
        .chunk_by(|a, b| a.0 == b.0)
        .scan(0, |r0, mine| {
            let range = *r0..*r0 + mine.len();
            *r0 = range.end;
            Some((mine[0].0, range))
        })
        .collect();
    for (j, range) in &per_sequence {
        let (j, r0, r1) = (*j, range.start, range.end);
        let mine = &rows[r0..r1];
        let from = mine
            .iter()
            .map(|r| visible(cfg, r.1).start)
            .min()
            .unwrap_or(0);
        let from = from.max(split);
        let to = mine.iter().map(|r| r.1 + 1).max().unwrap_or(from);
        // SAFETY: `isa` is available; sequence `j`'s own run holds positions
        // `from - split..to - split`; rows `r0..r1` of `scores` from column `from - base` have
        // `to - from <= ldo - (from - base)` floats (every row's position is below `base + ldo`).
        unsafe {
            score_run(
                isa,
                &q[r0 * d..r1 * d],
                d,
                seqs[j].own.keys_from(from - split, kvh),
                seqs[j].own.dtype,
                seqs[j].own.position_stride,
                to - from,
                sp.add(r0 * ldo + from - base),
                ldo,
            )
        };
    }
    let mut z = Vec::with_capacity(m);
    let mut descs = Vec::with_capacity(m);
    for (r, &(_, p, out)) in rows.iter().enumerate() {
        let seen = visible(cfg, p);
        // SAFETY: `seen` lies within `base..base + ldo`, so the slice is inside row `r` of
        // `scores` (a live `Vec`); no other reference to it exists meanwhile.
        let s = unsafe {
            std::slice::from_raw_parts_mut(sp.add(r * ldo + seen.start - base), seen.len())
        };
        z.push(softmax_numerators(isa, cfg, s));
        // SAFETY: `out` is this (row, kv head)'s `d` outputs, ours alone (our contract).
        unsafe { std::slice::from_raw_parts_mut(out, d) }.fill(0.0);
        descs.push(AttnRow {
            q: std::ptr::null(),
            lo: seen.start,
            hi: seen.end,
            // SAFETY: `r < m`: row `r` of the `m · ldo` scores.
            scores: unsafe { sp.add(r * ldo) },
            out,
        });
    }
    // The shared run's sums for every row at once (sorted by position, as the sums need),
    // then each sequence's own.
    let ahead = PREFETCH_POSITIONS;
    if base < split {
        let mut by_position: Vec<AttnRow> = descs.clone();
        by_position.sort_by_key(|r| (r.lo, r.hi));
        // SAFETY: `isa` is available; every row's scores cover its visible positions from
        // `base`, its `out` is its own `d` floats, and the rows are sorted by position.
        unsafe { sums_in(isa, Run::Shared, &by_position, base, &runs, kvh, ahead) };
    }
    for (j, range) in per_sequence {
        let runs = Runs::of(&seqs[j]);
        let mine = &descs[range];
        // SAFETY: as for the shared run; one sequence's rows are consecutive and sorted.
        unsafe { sums_in(isa, Run::Own, mine, base, &runs, kvh, ahead) };
    }
    for (&(_, _, out), z) in rows.iter().zip(z) {
        // SAFETY: `out` is this (row, kv head)'s `d` outputs, ours alone (our contract).
        for v in unsafe { std::slice::from_raw_parts_mut(out, d) } {
            *v /= z;
        }
    }
}

/// Turns the dot products `s` of one query row with its visible keys into the numerators of
/// its softmax, `e_t = exp(scale·s_t (soft-capped) − max)`, and returns their sum `Z` in the
/// 16-lane order (lane `l` adds the indices `≡ l (mod 16)` in increasing order, then the lane
/// tree [`fold`]). Shared by both paths, so a row's weights do not depend on the path.
///
/// Plain `f32` operations only (no fused multiply-adds: Rust never contracts), so the compiler
/// may vectorize it at any width with the same bits; with AVX-512 it is compiled 16 lanes wide.
pub(super) fn softmax_numerators(isa: Isa, cfg: &Attention, s: &mut [f32]) -> f32 {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller checked that `isa` is available.
        Isa::Avx512 => unsafe { softmax_avx512(cfg, s) },
        _ => softmax_plain(cfg, s),
    }
}

/// [`softmax_plain`] compiled with AVX-512.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
pub(super) unsafe fn softmax_avx512(cfg: &Attention, s: &mut [f32]) -> f32 {
    softmax_plain(cfg, s)
}

/// The body of [`softmax_numerators`], in two passes of 16-lane chunks: scale (and cap) with
/// 16 running maxima, then the exponentials with the 16 running sums.
#[inline(always)]
pub(super) fn softmax_plain(cfg: &Attention, s: &mut [f32]) -> f32 {
    let bigger = |a: f32, b: f32| if b > a { b } else { a };
    let scaled = |v: f32| {
        let v = v * cfg.scale;
        match cfg.softcap {
            Some(cap) => cap * (v / cap).tanh(),
            None => v,
        }
    };
    let mut m = [f32::NEG_INFINITY; LANES];
    let mut chunks = s.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for l in 0..LANES {
            c[l] = scaled(c[l]);
            m[l] = bigger(m[l], c[l]);
        }
    }
    for (m, v) in m.iter_mut().zip(chunks.into_remainder()) {
        *v = scaled(*v);
        *m = bigger(*m, *v);
    }
    // Only the sign of a zero maximum could depend on the order, and `x − max` is then the
    // same for every `x` but `±0`, whose exponential is `1` either way.
    let max = m.into_iter().fold(f32::NEG_INFINITY, bigger);
    let mut acc = [0f32; LANES];
    let mut chunks = s.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for l in 0..LANES {
            c[l] = math::exp(c[l] - max);
            acc[l] += c[l];
        }
    }
    for (a, v) in acc.iter_mut().zip(chunks.into_remainder()) {
        *v = math::exp(*v - max);
        *a += *v;
    }
    fold(acc)
}
