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

/// Keys and values of consecutive positions, stored as `f32`, `bf16` or `f16` (a
/// [`CacheElement`]), in either of two layouts: position-major (`[len, kv_heads, head_dim]`,
/// as a projection writes them) or head-major (`[kv_heads, capacity, head_dim]`, the first
/// `len` positions of each kv head used, as a growing cache keeps them). Kv head `h`'s key of
/// position `t` starts at element `h · head_stride + t · position_stride` of `keys`, its value
/// at the same element of `values`.
///
/// Head-major is the faster layout for decode: a task reads one kv head's keys and values
/// as one contiguous stream instead of `head_dim`-element pieces `kv_heads · head_dim` apart.
/// A 16-bit element halves the bytes attention reads; it is widened to `f32` exactly as it is
/// loaded, so a `bf16` run gives the same bits as an `f32` run holding the widened values.
#[derive(Debug, Clone, Copy)]
pub struct KeysValues<'a> {
    keys: &'a [u8],
    values: &'a [u8],
    dtype: Dtype,
    len: usize,
    head_dim: usize,
    head_stride: usize,
    position_stride: usize,
}

impl Default for KeysValues<'_> {
    /// No positions (an `f32` run).
    fn default() -> Self {
        KeysValues {
            keys: &[],
            values: &[],
            dtype: Dtype::F32,
            len: 0,
            head_dim: 0,
            head_stride: 0,
            position_stride: 0,
        }
    }
}

/// An element type keys and values can be stored in: `f32`, [`half::bf16`] or [`half::f16`].
/// Sealed: the kernels read exactly these.
pub trait CacheElement: sealed::Sealed + Copy {
    /// Its [`Dtype`].
    const DTYPE: Dtype;
}

impl CacheElement for f32 {
    const DTYPE: Dtype = Dtype::F32;
}

impl CacheElement for half::bf16 {
    const DTYPE: Dtype = Dtype::Bf16;
}

impl CacheElement for half::f16 {
    const DTYPE: Dtype = Dtype::F16;
}

mod sealed {
    /// Keeps [`super::CacheElement`] to the types the kernels know.
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// The bytes of `elements` (plain numbers: every byte is initialized, any alignment of `u8`
/// holds).
fn bytes_of<T: CacheElement>(elements: &[T]) -> &[u8] {
    // SAFETY: `T` is `f32`, `bf16` or `f16` (sealed): no padding, every bit pattern a number,
    // and `u8` needs no alignment; the length covers exactly the same memory.
    unsafe { std::slice::from_raw_parts(elements.as_ptr().cast(), std::mem::size_of_val(elements)) }
}

impl<'a> KeysValues<'a> {
    /// Position-major runs: `keys` and `values` are `[len, kv_heads, head_dim]` each.
    ///
    /// # Panics
    /// If `kv_heads · head_dim` is 0, or does not divide the keys' length, or the values are
    /// not as long as the keys.
    pub fn position_major<T: CacheElement>(
        keys: &'a [T],
        values: &'a [T],
        kv_heads: usize,
        head_dim: usize,
    ) -> Self {
        let width = kv_heads * head_dim;
        assert!(
            width > 0 && keys.len().is_multiple_of(width) && values.len() == keys.len(),
            "KeysValues: {} keys and {} values are not [len, {kv_heads}, {head_dim}] each",
            keys.len(),
            values.len()
        );
        let len = keys.len() / width;
        KeysValues::of(keys, values, len, head_dim, head_dim, width)
    }

    /// Head-major runs: `keys` and `values` are `[kv_heads, capacity, head_dim]` each, of
    /// which the first `len` positions of every kv head hold keys and values.
    ///
    /// # Panics
    /// If `capacity · head_dim` is 0 (with `len > 0`) or does not divide the keys' length,
    /// the values are not as long as the keys, or `len > capacity`.
    pub fn head_major<T: CacheElement>(
        keys: &'a [T],
        values: &'a [T],
        len: usize,
        capacity: usize,
        head_dim: usize,
    ) -> Self {
        let head = capacity * head_dim;
        assert!(
            len <= capacity
                && values.len() == keys.len()
                && (head > 0 && keys.len().is_multiple_of(head) || len == 0),
            "KeysValues: {} keys and {} values are not [kv_heads, {capacity}, {head_dim}] \
             each with {len} positions used",
            keys.len(),
            values.len()
        );
        KeysValues::of(keys, values, len, head_dim, head, head_dim)
    }

    /// A run over `keys` and `values` with the given strides (checked by the callers).
    fn of<T: CacheElement>(
        keys: &'a [T],
        values: &'a [T],
        len: usize,
        head_dim: usize,
        head_stride: usize,
        position_stride: usize,
    ) -> Self {
        KeysValues {
            keys: bytes_of(keys),
            values: bytes_of(values),
            dtype: T::DTYPE,
            len,
            head_dim,
            head_stride,
            position_stride,
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How the elements are stored.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Kv head `kv_head`'s key of position `t`, widened to `f32` (`head_dim` floats).
    ///
    /// # Panics
    /// If the position or the kv head is out of range.
    pub fn key(&self, t: usize, kv_head: usize) -> Vec<f32> {
        self.widened(self.keys, t, kv_head)
    }

    /// Kv head `kv_head`'s value of position `t`, widened to `f32` (`head_dim` floats).
    ///
    /// # Panics
    /// If the position or the kv head is out of range.
    pub fn value(&self, t: usize, kv_head: usize) -> Vec<f32> {
        self.widened(self.values, t, kv_head)
    }

    /// The row of position `t`, kv head `kv_head` of `bytes` (the keys or the values), widened.
    fn widened(&self, bytes: &[u8], t: usize, kv_head: usize) -> Vec<f32> {
        let mut row = vec![0.0; self.head_dim];
        self.widen_into(bytes, t, kv_head, &mut row);
        row
    }

    /// Writes the row of position `t`, kv head `kv_head` of `bytes` widened into `row`
    /// (`head_dim` floats).
    fn widen_into(&self, bytes: &[u8], t: usize, kv_head: usize, row: &mut [f32]) {
        assert!(t < self.len, "KeysValues: position {t} of {}", self.len);
        let size = self.dtype.size();
        let at = self.offset(t, kv_head) * size;
        let bytes = &bytes[at..at + self.head_dim * size];
        // One loop per type (the prefill path widens every key of the cache per call).
        let halves = bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        match self.dtype {
            Dtype::F32 => {
                for (x, b) in row.iter_mut().zip(bytes.chunks_exact(4)) {
                    *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            Dtype::Bf16 => row
                .iter_mut()
                .zip(halves)
                .for_each(|(x, h)| *x = bf16_to_f32(h)),
            Dtype::F16 => row
                .iter_mut()
                .zip(halves)
                .for_each(|(x, h)| *x = f16_to_f32(h)),
        }
    }

    /// Where kv head `kv_head`'s row of position `t` starts, in elements.
    fn offset(&self, t: usize, kv_head: usize) -> usize {
        kv_head * self.head_stride + t * self.position_stride
    }

    /// Whether `kv_heads` heads of `head_dim` elements fit every position held.
    fn fits(&self, kv_heads: usize, head_dim: usize) -> bool {
        self.len == 0
            || self.head_dim == head_dim
                && (self.offset(self.len - 1, kv_heads - 1) + head_dim) * self.dtype.size()
                    <= self.keys.len()
    }

    /// Kv head `kv_head`'s keys from position `t` on (stride [`Self::position_stride`]
    /// elements).
    fn keys_from(&self, t: usize, kv_head: usize) -> *const u8 {
        self.keys[self.offset(t, kv_head) * self.dtype.size()..].as_ptr()
    }

    /// Kv head `kv_head`'s values from position 0 on.
    fn values_of(&self, kv_head: usize) -> *const u8 {
        self.values[self.offset(0, kv_head) * self.dtype.size()..].as_ptr()
    }
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

/// A sequence's keys and values: positions before `split()` in `shared`, the rest in `own`.
#[derive(Debug, Clone, Copy)]
struct Runs<'a> {
    shared: KeysValues<'a>,
    own: KeysValues<'a>,
}

impl<'a> Runs<'a> {
    /// The runs of `seq`.
    fn of(seq: &Sequence<'a>) -> Self {
        Runs {
            shared: seq.shared,
            own: seq.own,
        }
    }

    /// The first position of `own`.
    fn split(&self) -> usize {
        self.shared.len
    }

    /// Writes kv head `kvh`'s key of position `t`, widened, into `row`.
    fn key_into(&self, t: usize, kvh: usize, row: &mut [f32]) {
        match t.checked_sub(self.split()) {
            None => self.shared.widen_into(self.shared.keys, t, kvh, row),
            Some(t) => self.own.widen_into(self.own.keys, t, kvh, row),
        }
    }
}

/// Query rows per score product: a decode tile's rows.
const SCORE_ROWS: usize = 8;
/// Positions per block of the score products: every block's keys stay in L1 while all the
/// task's rows take them.
const SCORE_POSITIONS: usize = 64;

/// Scores `out[r · ldo + c] = reference_dot(q_r, k_c)` of the `m` packed rows `q` (`[m, d]`)
/// for `count` positions of one run, whose first position's kv head starts at `keys`
/// (`dtype` elements, `ld` of them per position).
///
/// # Safety
/// `isa` is available; `keys` is readable for `count` positions at stride `ld` (`d` elements
/// each); `out` is writable for `m` rows of `count` floats at stride `ldo` and nobody else
/// touches them.
#[allow(clippy::too_many_arguments)]
unsafe fn score_run(
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
                out: out.add(r0 * ldo),
                ldo,
                ahead_cols: PREFETCH_POSITIONS,
            };
            simd::gemm_cols(isa, &g, c0, c1, &mut scratch);
        }
    }
}

/// The run a part of [`sums_in`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
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
unsafe fn sums_in(
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
                scores: r.scores.add(from - base),
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
    simd::attn_sums(isa, &part, base, &v);
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
unsafe fn decode_task(
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
            let out = outs[j].get().add(i * row + (kvh * group + r) * d);
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
        );
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
        );
    }
    let mut z = Vec::with_capacity(m);
    let mut descs = Vec::with_capacity(m);
    for (r, &(_, p, out)) in rows.iter().enumerate() {
        let seen = visible(cfg, p);
        let s = std::slice::from_raw_parts_mut(sp.add(r * ldo + seen.start - base), seen.len());
        z.push(softmax_numerators(isa, cfg, s));
        std::slice::from_raw_parts_mut(out, d).fill(0.0);
        descs.push(AttnRow {
            q: std::ptr::null(),
            lo: seen.start,
            hi: seen.end,
            scores: sp.add(r * ldo),
            out,
        });
    }
    // The shared run's sums for every row at once (sorted by position, as the sums need),
    // then each sequence's own.
    let ahead = PREFETCH_POSITIONS;
    if base < split {
        let mut by_position: Vec<AttnRow> = descs.clone();
        by_position.sort_by_key(|r| (r.lo, r.hi));
        sums_in(isa, Run::Shared, &by_position, base, &runs, kvh, ahead);
    }
    for (j, range) in per_sequence {
        let runs = Runs::of(&seqs[j]);
        let mine = &descs[range];
        sums_in(isa, Run::Own, mine, base, &runs, kvh, ahead);
    }
    for (&(_, _, out), z) in rows.iter().zip(z) {
        for v in std::slice::from_raw_parts_mut(out, d) {
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
fn block_task(
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
