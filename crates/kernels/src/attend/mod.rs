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
//! The keys and values come as [`KeysValues`] runs, position-major (as a projection writes
//! them) or head-major (as the model's host cache keeps them, each kv head one contiguous
//! stream); the layout changes which addresses are read, never a value or an order.
//!
//! Two paths compute those same steps. A few query rows (decode) take one kv head per task
//! ([`decode_task`]): the scores of the query heads sharing it through the matrix-product
//! tiles, then their weighted sums sharing each load of a value (`simd::attn_sums`);
//! [`attend_many`] runs the pieces of a whole batch in one parallel section, and the rows of
//! forks that hold the same prompt (a shared run of keys and values, [`Sequence::shared`])
//! share a task, so each shared key and value is read once for all of them: a chain over the
//! shared run continues over the fork's own run, the steps of one buffer. Many rows (prefill,
//! from [`BLOCKED_MIN_ROWS`]) take the blocked path ([`blocked`]): keys transposed once per
//! call, [`BLOCK_POSITIONS`] positions per task, several query rows sharing every load of a
//! key or value block (see `simd::attn` for why each score and each sum keeps the
//! reference's order). Work is split over query rows (and kv heads), never over keys.
//!
//! The files: this one holds the API and the split of a call into tasks; `cache.rs` the
//! [`KeysValues`] layouts; `decode.rs` the decode task and the softmax; `blocked.rs` the
//! blocked prefill path.

mod blocked;
mod cache;
mod decode;

pub use cache::{CacheElement, KeysValues};

use blocked::*;
use decode::*;

use std::cell::RefCell;

use crate::dtype::{bf16_to_f32, f16_to_f32};
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
        shared: KeysValues::default(),
        own: KeysValues::position_major(keys, values, cfg.kv_heads, cfg.head_dim),
        out,
    }];
    attend_many_on(isa, cfg, &mut job);
}

/// One sequence's part of [`attend_many`]: the arguments of [`attend`], its keys and values
/// in two runs.
#[derive(Debug)]
pub struct Sequence<'a> {
    /// `[n, heads, head_dim]`, RoPE applied.
    pub queries: &'a [f32],
    /// Positions held before the `n` new ones.
    pub past: usize,
    /// The keys and values of the first positions when other sequences of the call hold the
    /// very same ones (forks of one prompt: the same slices, compared by address and length):
    /// their decode rows read each shared position once for all of them. Empty when none.
    pub shared: KeysValues<'a>,
    /// The keys and values of the positions after `shared` (`past + n − shared` of them), the
    /// new rows appended.
    pub own: KeysValues<'a>,
    /// `[n, heads · head_dim]`.
    pub out: &'a mut [f32],
}

/// [`attend`] for several sequences of one layer (a batched forward pass): each sequence's
/// outputs are exactly what [`attend`] gives it alone, whoever shares the call and whether
/// its keys and values come in one run or two. Decode-sized sequences (fewer than 8 new
/// rows) share one parallel section: those holding the same [`Sequence::shared`] run form a
/// group, and a task takes up to 16 of a group's query rows for one kv head, reading each
/// shared key and value once for all of them. Longer sequences take the blocked path one
/// after the other.
///
/// # Panics
/// As [`attend`], for any sequence, or if a sequence's `shared` run is longer than its past.
pub fn attend_many(cfg: &Attention, seqs: &mut [Sequence<'_>]) {
    attend_many_on(Isa::best(), cfg, seqs)
}

/// [`attend_many`] with a chosen instruction set.
///
/// # Panics
/// If `isa` is not available on this CPU, or as [`attend_many`].
pub fn attend_many_on(isa: Isa, cfg: &Attention, seqs: &mut [Sequence<'_>]) {
    assert!(isa.is_available(), "{isa:?} is not available on this CPU");
    let (heads, kv_heads) = (cfg.heads, cfg.kv_heads);
    assert!(
        kv_heads > 0 && heads % kv_heads == 0,
        "attend: {kv_heads} kv heads do not divide {heads} heads"
    );
    assert_ne!(cfg.window, Some(0), "attend: a window of 0 sees nothing");
    assert!(heads * cfg.head_dim > 0, "attend: empty heads");
    let group = heads / kv_heads;
    let rows: Vec<usize> = seqs.iter().map(|seq| check(cfg, seq)).collect();
    // Decode-sized sequences, grouped by the shared run they read (a sequence without one
    // is a group of its own); longer ones take the blocked path now.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut work = 0;
    for (j, &n) in rows.iter().enumerate() {
        let fmas = fmas(cfg, seqs[j].past, n);
        if n >= BLOCKED_MIN_ROWS {
            blocked(isa, cfg, &mut seqs[j], fmas >= PARALLEL_MIN_FMAS);
            continue;
        }
        work += fmas;
        let shared = &seqs[j].shared;
        let joined = groups
            .iter_mut()
            .find(|g| !shared.is_empty() && same_run(&seqs[g[0]].shared, shared));
        match joined {
            Some(g) => g.push(j),
            None => groups.push(vec![j]),
        }
    }
    // Tasks: up to `TASK_ROWS` query rows of one group (whole new rows, `group` query heads
    // each) for one kv head; a group's new rows are split evenly.
    let per_task = (TASK_ROWS / group).max(1);
    let mut units: Vec<(usize, usize)> = Vec::new();
    let mut tasks: Vec<(std::ops::Range<usize>, usize)> = Vec::new();
    for g in &groups {
        let first = units.len();
        units.extend(g.iter().flat_map(|&j| (0..rows[j]).map(move |i| (j, i))));
        let count = units.len() - first;
        let pieces = count.div_ceil(per_task);
        let size = count.div_ceil(pieces);
        // The pieces of one kv head run side by side, on different threads: the one that
        // reads a shared position second finds it in the last-level cache.
        for kvh in 0..kv_heads {
            for start in (first..units.len()).step_by(size) {
                tasks.push((start..(start + size).min(units.len()), kvh));
            }
        }
    }
    let outs: Vec<SendPtr<f32>> = seqs
        .iter_mut()
        .map(|s| SendPtr(s.out.as_mut_ptr()))
        .collect();
    let seqs = &*seqs;
    let task = |t: usize| {
        let (piece, kvh) = &tasks[t];
        // SAFETY: the tasks' (new row, kv head) pairs are disjoint, and each writes only the
        // outputs of its own pairs (`decode_task`'s contract); the outputs are borrowed
        // mutably for the call and no one else touches them meanwhile.
        unsafe { decode_task(isa, cfg, seqs, &outs, &units[piece.clone()], *kvh) };
    };
    if work >= PARALLEL_MIN_FMAS {
        team::for_each(tasks.len(), &task);
    } else {
        (0..tasks.len()).for_each(task);
    }
}

/// Query rows a decode task takes at most (fewer when a new row's query heads do not fill it;
/// at least one new row's): enough to share each load of a shared key or value widely, few
/// enough that a group of forks still makes a task per thread.
const TASK_ROWS: usize = 16;

/// Whether two runs are the same memory and layout (a fork's shared prefix).
fn same_run(a: &KeysValues<'_>, b: &KeysValues<'_>) -> bool {
    std::ptr::eq(a.keys, b.keys)
        && std::ptr::eq(a.values, b.values)
        && a.dtype == b.dtype
        && (a.len, a.head_stride, a.position_stride) == (b.len, b.head_stride, b.position_stride)
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
    let (shared, own) = (&seq.shared, &seq.own);
    assert!(
        shared.len <= seq.past,
        "attend: {} shared positions but only {} past",
        shared.len,
        seq.past
    );
    assert_eq!(
        own.len,
        len - shared.len,
        "attend: {} own positions after {} shared, not {len} in all",
        own.len,
        shared.len
    );
    for (run, name) in [(shared, "shared"), (own, "own")] {
        assert!(
            run.fits(kv_heads, d),
            "attend: the {name} keys and values do not hold {} positions of {kv_heads} kv \
             heads of {d}",
            run.len
        );
    }
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
