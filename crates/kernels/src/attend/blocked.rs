//! The blocked path for many query rows (prefill): keys transposed once per call, a block of
//! positions per task, several query rows sharing every load of a key or value block.

#[allow(unused_imports)]
use super::*;

/// Query positions per task of the blocked path.
pub(super) const BLOCK_POSITIONS: usize = 8;
/// From this many query rows on, a call takes the blocked path: keys are transposed once
/// per call (a pass over the cache), which pays for itself once several rows read them.
pub(super) const BLOCKED_MIN_ROWS: usize = 8;

thread_local! {
    /// The blocked path's padded queries, scores and row descriptors, kept per thread.
    static BLOCK_SCRATCH: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The blocked path (prefill): the keys of each kv head are transposed once into blocks of
/// 16 positions (`kt[b][i][t % 16]`, the head zero-padded to a multiple of 16), then each
/// task takes [`BLOCK_POSITIONS`] consecutive query positions and, per kv head, computes the
/// scores of all their query rows against the key blocks they see (`simd::attn_scores`:
/// every score is `reference_dot(q, k_t)`), the softmax of each row over exactly its visible
/// keys ([`softmax_numerators`], as the one-row path), and the weighted sums
/// (`simd::attn_sums`: one chain per output element in increasing `t`, as the one-row
/// path). Every step of a row is the one-row path's step, so the bits are the
/// same. Tasks split the query positions, never the keys.
pub(super) fn blocked(isa: Isa, cfg: &Attention, seq: &mut Sequence<'_>, parallel: bool) {
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    let row = heads * d;
    let (queries, past, runs) = (seq.queries, seq.past, Runs::of(seq));
    let out = &mut *seq.out;
    let n = queries.len() / row;
    let len = past + n;
    let chunks = d.div_ceil(LANES);
    let dp = chunks * LANES;
    // Transposed keys from the block of the first visible position on.
    let first = visible(cfg, past).start / LANES;
    let nb = len.div_ceil(LANES) - first;
    let head_len = nb * dp * LANES;
    let mut kt = vec![0f32; kv_heads * head_len];
    let transpose = |(kvh, kt): (usize, &mut [f32])| {
        let mut key = vec![0f32; d];
        for t in first * LANES..len {
            let (b, lane) = (t / LANES - first, t % LANES);
            runs.key_into(t, kvh, &mut key);
            let block = &mut kt[b * dp * LANES..][..dp * LANES];
            for (i, &k) in key.iter().enumerate() {
                block[i * LANES + lane] = k;
            }
        }
    };
    if parallel {
        team::for_each_chunk(&mut kt, head_len, &|i, c| transpose((i, c)));
    } else {
        kt.chunks_exact_mut(head_len)
            .enumerate()
            .for_each(transpose);
    }
    let task = |(blk, chunk): (usize, &mut [f32])| {
        let i0 = blk * BLOCK_POSITIONS;
        let positions = chunk.len() / row;
        BLOCK_SCRATCH.with(|scratch| {
            let (qbuf, sbuf) = &mut *scratch.borrow_mut();
            block_task(
                isa,
                cfg,
                &queries[i0 * row..][..positions * row],
                past + i0,
                &kt,
                first,
                &runs,
                chunk,
                qbuf,
                sbuf,
            );
        });
    };
    if parallel {
        team::for_each_chunk(out, BLOCK_POSITIONS * row, &|i, c| task((i, c)));
    } else {
        out.chunks_mut(BLOCK_POSITIONS * row)
            .enumerate()
            .for_each(task);
    }
}

/// One task of [`blocked`]: the query rows of positions `p0..` (`queries`, `[positions, heads,
/// d]`) into `out` (the same shape), against the transposed keys `kt` (every kv head's blocks
/// from block `first` on).
#[allow(clippy::too_many_arguments)]
pub(super) fn block_task(
    isa: Isa,
    cfg: &Attention,
    queries: &[f32],
    p0: usize,
    kt: &[f32],
    first: usize,
    runs: &Runs<'_>,
    out: &mut [f32],
    qbuf: &mut Vec<f32>,
    sbuf: &mut Vec<f32>,
) {
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    let group = heads / kv_heads;
    let row = heads * d;
    let positions = queries.len() / row;
    let chunks = d.div_ceil(LANES);
    let dp = chunks * LANES;
    let head_len = kt.len() / kv_heads;
    let rows = positions * group;
    // Scores of every row from the block of the first row's first visible key.
    let base = visible(cfg, p0).start / LANES * LANES;
    let lds = (p0 + positions).div_ceil(LANES) * LANES - base;
    qbuf.clear();
    qbuf.resize(rows * dp, 0.0);
    sbuf.clear();
    sbuf.resize(rows * lds, 0.0);
    out.fill(0.0);
    // Every pointer below comes from these three, and the slices made from them are
    // disjoint per row.
    let (qp, sp, op) = (qbuf.as_mut_ptr(), sbuf.as_mut_ptr(), out.as_mut_ptr());
    let mut descs = Vec::with_capacity(rows);
    let mut z = Vec::with_capacity(rows);
    for kvh in 0..kv_heads {
        descs.clear();
        for j in 0..rows {
            let (i, h) = (j / group, kvh * group + j % group);
            let seen = visible(cfg, p0 + i);
            // SAFETY: row `j`'s `dp` floats of `qbuf`, its `lds` of `sbuf` and its head's
            // `d` of `out` are in bounds (sized above) and belong to this row alone.
            unsafe {
                let q = std::slice::from_raw_parts_mut(qp.add(j * dp), d);
                q.copy_from_slice(&queries[(i * heads + h) * d..][..d]);
                descs.push(AttnRow {
                    q: qp.add(j * dp),
                    lo: seen.start,
                    hi: seen.end,
                    scores: sp.add(j * lds),
                    out: op.add(i * row + h * d),
                });
            }
        }
        let s = Scores {
            kt: kt[kvh * head_len..].as_ptr(),
            first,
            chunks,
            base,
        };
        // SAFETY: `isa` is available (asserted by `attend_on`); each row's padded query is
        // `dp` floats of `qbuf`; its scores row is `lds` floats of `sbuf`, enough for the
        // blocks up to its last visible key rounded up to 16 (`lds` runs from `base` to the
        // task's last position rounded up); the transposed keys hold every block from
        // `first` (`<= base / 16`) to the last position; the rows are in position order.
        unsafe { simd::attn_scores(isa, &descs, &s) };
        z.clear();
        for desc in &descs {
            // SAFETY: the row's visible part of its scores row (above).
            let s = unsafe {
                std::slice::from_raw_parts_mut(desc.scores.add(desc.lo - base), desc.hi - desc.lo)
            };
            z.push(softmax_numerators(isa, cfg, s));
        }
        // SAFETY: `isa` is available; each row's scores cover its visible range (above), its
        // output is its own `d` floats of `out`, zeroed; the values of every visible position
        // lie inside the runs (`check` matched their lengths with `past + n` positions).
        unsafe {
            sums_in(isa, Run::Shared, &descs, base, runs, kvh, 0);
            sums_in(isa, Run::Own, &descs, base, runs, kvh, 0);
        }
        for (desc, &z) in descs.iter().zip(&z) {
            // SAFETY: the row's own `d` outputs (above).
            let o = unsafe { std::slice::from_raw_parts_mut(desc.out, d) };
            for o in o {
                *o /= z;
            }
        }
    }
}
