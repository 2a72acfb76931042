//! Causal self-attention of one sequence against its key/value cache, in a fixed order, so a
//! query row's output depends only on that row and the keys and values it can see — not on how
//! many other query rows share the call. One forward of `n` tokens then equals `n` forwards of
//! one token, bit for bit.
//!
//! For the query of head `h` at position `p` (GQA: it reads kv head `h / (heads / kv_heads)`),
//! with visible positions `lo..=p` (`lo = 0`, or `p + 1 - window` with a sliding window):
//!
//! 1. `s_t = scale · dot(q, k_t)`, the dot in [`crate::reference_dot`]'s order;
//! 2. with a soft cap, `s_t = cap · tanh(s_t / cap)` (Gemma 2);
//! 3. `e_t = exp(s_t − max s)` ([`crate::math::exp`]), `Z = Σ e_t` in the 16-lane order;
//! 4. `out = (Σ_t e_t · v_t) / Z`, each output element one fused multiply-add chain over `t`
//!    in increasing order.
//!
//! Only the visible keys take part (no `-inf` padding). Reference: HF transformers'
//! `eager_attention_forward`.
//!
//! Two paths compute those same steps. A few query rows (decode) take each row's kv head
//! alone: the scores of the query heads sharing it through the matrix-product tiles, then
//! their weighted sums sharing each load of a value (`simd::attn_sums`); [`attend_many`] runs
//! the (sequence, row, kv head) pieces of a whole batch in one parallel section. Many rows
//! (prefill, from [`BLOCKED_MIN_ROWS`]) take the blocked path ([`blocked`]): keys transposed
//! once per call, [`BLOCK_POSITIONS`] positions per task, several query rows sharing every
//! load of a key or value block (see `simd::attn` for why each score and each sum keeps the
//! reference's order). Work is split over query rows (and kv heads), never over keys.

use std::cell::RefCell;

use crate::reference::fold;
use crate::simd::{self, AttnRow, Gemm, Scores, Values};
use crate::team::{self, SendPtr};
use crate::{math, Dtype, Isa, LANES};

/// How many positions ahead decode attention asks for keys and values while it computes: the
/// cache is read once per step, from memory, in short strides the hardware prefetchers of a
/// virtual machine barely follow.
const PREFETCH_POSITIONS: usize = 32;

/// Below this many multiply-adds a call stays on the calling thread.
const PARALLEL_MIN_FMAS: usize = 1 << 18;

/// The shape and options of an attention layer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attention {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (divides `heads`; query head `h` uses kv head `h / (heads / kv_heads)`).
    pub kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Factor on every score (usually `1 / √head_dim`; `1.0` if the queries are pre-scaled).
    pub scale: f32,
    /// Sliding window: a query at position `p` sees positions `p + 1 − window ..= p`.
    pub window: Option<usize>,
    /// Soft cap on the scores: `s → cap · tanh(s / cap)`, before the causal mask.
    pub softcap: Option<f32>,
}

/// Attention of `n` new query rows at positions `past..past + n`, with the widest instruction
/// set this CPU has.
///
/// For the query of head `h` at position `p` (GQA: it reads kv head `h / (heads / kv_heads)`),
/// with visible positions `lo..=p` (`lo = 0`, or `p + 1 - window` with a sliding window):
/// `s_t = scale · dot(q, k_t)` in [`crate::reference_dot`]'s order; with a soft cap
/// `s_t = cap · tanh(s_t / cap)`; `e_t = exp(s_t − max s)`; `out = (Σ_t e_t · v_t) / Σ_t e_t`,
/// each output element one fused multiply-add chain over `t` in increasing order. Only the
/// visible keys take part, so a query row's bits depend on nothing but its own row and the
/// keys and values it sees: a chunk of `n` rows equals `n` calls of one row.
///
/// # Shapes
/// - `queries`: `[n, heads, head_dim]` (RoPE already applied);
/// - `keys`, `values`: `[past + n, kv_heads, head_dim]`, the `n` new rows already appended;
/// - `out`: `[n, heads · head_dim]`.
///
/// # Panics
/// If a length does not match those shapes, or `kv_heads` does not divide `heads`, or
/// `window == Some(0)`.
pub fn attend(
    cfg: &Attention,
    queries: &[f32],
    past: usize,
    keys: &[f32],
    values: &[f32],
    out: &mut [f32],
) {
    attend_on(Isa::best(), cfg, queries, past, keys, values, out)
}

/// [`attend`] with a chosen instruction set (every one gives the same bits).
///
/// # Panics
/// If `isa` is not available on this CPU, or as [`attend`].
pub fn attend_on(
    isa: Isa,
    cfg: &Attention,
    queries: &[f32],
    past: usize,
    keys: &[f32],
    values: &[f32],
    out: &mut [f32],
) {
    let mut job = [Sequence {
        queries,
        past,
        keys,
        values,
        out,
    }];
    attend_many_on(isa, cfg, &mut job);
}

/// One sequence's part of [`attend_many`]: the arguments of [`attend`].
#[derive(Debug)]
pub struct Sequence<'a> {
    /// `[n, heads, head_dim]`, RoPE applied.
    pub queries: &'a [f32],
    /// Positions held before the `n` new ones.
    pub past: usize,
    /// `[past + n, kv_heads, head_dim]`, the new rows appended.
    pub keys: &'a [f32],
    /// As `keys`.
    pub values: &'a [f32],
    /// `[n, heads · head_dim]`.
    pub out: &'a mut [f32],
}

/// [`attend`] for several sequences of one layer (a batched forward pass): each sequence's
/// outputs are exactly what [`attend`] gives it alone. Decode-sized sequences (fewer than
/// 8 new rows) share one parallel section, a task per (sequence, row, kv
/// head); longer ones take the blocked path one after the other.
///
/// # Panics
/// As [`attend`], for any sequence.
pub fn attend_many(cfg: &Attention, seqs: &mut [Sequence<'_>]) {
    attend_many_on(Isa::best(), cfg, seqs)
}

/// [`attend_many`] with a chosen instruction set.
///
/// # Panics
/// If `isa` is not available on this CPU, or as [`attend`].
pub fn attend_many_on(isa: Isa, cfg: &Attention, seqs: &mut [Sequence<'_>]) {
    assert!(isa.is_available(), "{isa:?} is not available on this CPU");
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    assert!(
        kv_heads > 0 && heads % kv_heads == 0,
        "attend: {kv_heads} kv heads do not divide {heads} heads"
    );
    assert_ne!(cfg.window, Some(0), "attend: a window of 0 sees nothing");
    let row = heads * d;
    assert!(row > 0, "attend: empty heads");
    let group = heads / kv_heads;
    // The one-row path's tasks: (sequence, row · kv_heads + kv head), `group · d` outputs each.
    let mut tasks = Vec::new();
    let mut work = 0;
    for (j, seq) in seqs.iter_mut().enumerate() {
        let n = check(cfg, seq);
        let parallel = fmas(cfg, seq.past, n) >= PARALLEL_MIN_FMAS;
        if n >= BLOCKED_MIN_ROWS {
            blocked(isa, cfg, seq, parallel);
            continue;
        }
        work += fmas(cfg, seq.past, n);
        tasks.extend((0..n * kv_heads).map(|idx| (j, idx)));
    }
    let outs: Vec<SendPtr<f32>> = seqs
        .iter_mut()
        .map(|s| SendPtr(s.out.as_mut_ptr()))
        .collect();
    let seqs = &*seqs;
    let task = |t: usize| {
        let (j, idx) = tasks[t];
        let seq = &seqs[j];
        let (i, kvh) = (idx / kv_heads, idx % kv_heads);
        let q = &seq.queries[i * row + kvh * group * d..][..group * d];
        // SAFETY: task `(j, idx)` writes floats `idx · group · d ..` of sequence `j`'s
        // output (`[n, heads · d]` = `n · kv_heads` such pieces, checked), which no other task
        // touches; the output is borrowed mutably for the call.
        let out = unsafe {
            std::slice::from_raw_parts_mut(outs[j].get().add(idx * group * d), group * d)
        };
        group_rows(isa, cfg, q, seq.past + i, kvh, seq.keys, seq.values, out);
    };
    if work >= PARALLEL_MIN_FMAS {
        team::for_each(tasks.len(), &task);
    } else {
        (0..tasks.len()).for_each(task);
    }
}

/// Checks a sequence's lengths against `cfg` and returns its number of new rows.
fn check(cfg: &Attention, seq: &Sequence<'_>) -> usize {
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    let row = heads * d;
    assert_eq!(
        seq.queries.len() % row,
        0,
        "attend: queries are not [n, {heads}, {d}]"
    );
    let n = seq.queries.len() / row;
    let len = seq.past + n;
    assert_eq!(
        seq.keys.len(),
        len * kv_heads * d,
        "attend: keys are not [{len}, {kv_heads}, {d}]"
    );
    assert_eq!(
        seq.values.len(),
        seq.keys.len(),
        "attend: values are not [{len}, {kv_heads}, {d}]"
    );
    assert_eq!(seq.out.len(), n * row, "attend: out is not [{n}, {row}]");
    n
}

/// Multiply-adds of `n` query rows after `past` positions (scores and sums).
fn fmas(cfg: &Attention, past: usize, n: usize) -> usize {
    let visible_keys: usize = (0..n).map(|i| visible(cfg, past + i).len()).sum();
    visible_keys * cfg.heads * cfg.head_dim * 2
}

/// The positions a query at `p` sees.
fn visible(cfg: &Attention, p: usize) -> std::ops::Range<usize> {
    let lo = cfg.window.map_or(0, |w| (p + 1).saturating_sub(w));
    lo..p + 1
}

/// The `group` query heads `q` (`[group, d]`) at position `p` that share kv head `kvh`, into
/// `out` (`[group, d]`).
#[allow(clippy::too_many_arguments)]
fn group_rows(
    isa: Isa,
    cfg: &Attention,
    q: &[f32],
    p: usize,
    kvh: usize,
    keys: &[f32],
    values: &[f32],
    out: &mut [f32],
) {
    let (d, kv_heads) = (cfg.head_dim, cfg.kv_heads);
    let group = q.len() / d;
    let seen = visible(cfg, p);
    let nt = seen.len();
    let ld = kv_heads * d;
    let first = seen.start * ld + kvh * d;
    let mut scores = vec![0f32; group * nt];
    let g = Gemm {
        x: q.as_ptr(),
        ldx: d,
        m: group,
        k: d,
        w: keys[first..].as_ptr().cast(),
        ldw: ld * 4,
        dtype: Dtype::F32,
        bias: std::ptr::null(),
        out: scores.as_mut_ptr(),
        ldo: nt,
        ahead_cols: PREFETCH_POSITIONS,
    };
    // Rows `t < nt` of `keys[first..]` at stride `ld` end at `first + (nt-1)*ld + d`
    // = `p*ld + kvh*d + d <= (past+n)*ld`: inside `keys` (checked by the caller's asserts).
    debug_assert!(first + (nt - 1) * ld + d <= keys.len());
    // SAFETY: `isa` is available (asserted by the caller); `q` holds `group` rows of `d`
    // floats; the key rows are inside `keys` (above); `scores` holds `group × nt` floats and is
    // owned here.
    unsafe { simd::gemm_cols(isa, &g, 0, nt, &mut Vec::new()) };

    // The `group` rows see the same positions: their weighted sums share each load of a
    // value (`simd::attn_sums`, the same chains as one row alone).
    let mut z = Vec::with_capacity(group);
    let mut descs = Vec::with_capacity(group);
    out.fill(0.0);
    let (sp, op) = (scores.as_mut_ptr(), out.as_mut_ptr());
    for r in 0..group {
        // SAFETY: row `r`'s `nt` scores and `d` outputs are in bounds and its own.
        let s = unsafe { std::slice::from_raw_parts_mut(sp.add(r * nt), nt) };
        z.push(softmax_numerators(isa, cfg, s));
        descs.push(AttnRow {
            q: std::ptr::null(),
            lo: seen.start,
            hi: seen.end,
            // SAFETY: as above.
            scores: unsafe { sp.add(r * nt) },
            out: unsafe { op.add(r * d) },
        });
    }
    let v = Values {
        v: values[kvh * d..].as_ptr(),
        ldv: ld,
        d,
        ahead: PREFETCH_POSITIONS,
    };
    // SAFETY: `isa` is available; each row's scores are `scores[t - seen.start]` for its
    // visible `t` (`base = seen.start`), its output is its own `d` zeroed floats; the values
    // of the visible positions lie inside `values` (as the keys, checked above).
    unsafe { simd::attn_sums(isa, &descs, seen.start, &v) };
    for (o, z) in out.chunks_mut(d).zip(z) {
        for v in o {
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
fn softmax_numerators(isa: Isa, cfg: &Attention, s: &mut [f32]) -> f32 {
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
unsafe fn softmax_avx512(cfg: &Attention, s: &mut [f32]) -> f32 {
    softmax_plain(cfg, s)
}

/// The body of [`softmax_numerators`], in two passes of 16-lane chunks: scale (and cap) with
/// 16 running maxima, then the exponentials with the 16 running sums.
#[inline(always)]
fn softmax_plain(cfg: &Attention, s: &mut [f32]) -> f32 {
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

/// Query positions per task of the blocked path.
const BLOCK_POSITIONS: usize = 8;
/// From this many query rows on, a call takes the blocked path: keys are transposed once
/// per call (a pass over the cache), which pays for itself once several rows read them.
const BLOCKED_MIN_ROWS: usize = 8;

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
fn blocked(isa: Isa, cfg: &Attention, seq: &mut Sequence<'_>, parallel: bool) {
    let (queries, past, keys, values) = (seq.queries, seq.past, seq.keys, seq.values);
    let out = &mut *seq.out;
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    let row = heads * d;
    let n = queries.len() / row;
    let len = past + n;
    let chunks = d.div_ceil(LANES);
    let dp = chunks * LANES;
    // Transposed keys from the block of the first visible position on.
    let first = visible(cfg, past).start / LANES;
    let nb = len.div_ceil(LANES) - first;
    let head_len = nb * dp * LANES;
    let mut kt = vec![0f32; kv_heads * head_len];
    let ld = kv_heads * d;
    let transpose = |(kvh, kt): (usize, &mut [f32])| {
        for t in first * LANES..len {
            let (b, lane) = (t / LANES - first, t % LANES);
            let key = &keys[t * ld + kvh * d..][..d];
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
                values,
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
fn block_task(
    isa: Isa,
    cfg: &Attention,
    queries: &[f32],
    p0: usize,
    kt: &[f32],
    first: usize,
    values: &[f32],
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
    let ld = kv_heads * d;
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
        let v = Values {
            v: values[kvh * d..].as_ptr(),
            ldv: ld,
            d,
            ahead: 0,
        };
        debug_assert!(values.len() >= (descs[rows - 1].hi - 1) * ld + kvh * d + d);
        // SAFETY: `isa` is available; each row's scores cover its visible range (above), its
        // output is its own `d` floats of `out`, zeroed; the values of every visible position
        // lie inside `values` (`attend_on` checked its length for `past + n` positions).
        unsafe { simd::attn_sums(isa, &descs, base, &v) };
        for (desc, &z) in descs.iter().zip(&z) {
            // SAFETY: the row's own `d` outputs (above).
            let o = unsafe { std::slice::from_raw_parts_mut(desc.out, d) };
            for o in o {
                *o /= z;
            }
        }
    }
}
