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
//! 3. `e_t = exp(s_t − max s)`, `Z = Σ e_t` in the 16-lane order;
//! 4. `out = (Σ_t e_t · v_t) / Z`, each output element one fused multiply-add chain over `t`
//!    in increasing order.
//!
//! Only the visible keys take part (no `-inf` padding). Work is split over query rows and kv
//! heads, never over keys. Reference: HF transformers' `eager_attention_forward`.

use rayon::prelude::*;

use crate::reference::fixed_sum;
use crate::simd::{self, Gemm};
use crate::{Dtype, Isa};

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
    let (heads, kv_heads, d) = (cfg.heads, cfg.kv_heads, cfg.head_dim);
    assert!(isa.is_available(), "{isa:?} is not available on this CPU");
    assert!(
        kv_heads > 0 && heads % kv_heads == 0,
        "attend: {kv_heads} kv heads do not divide {heads} heads"
    );
    assert_ne!(cfg.window, Some(0), "attend: a window of 0 sees nothing");
    let row = heads * d;
    assert!(row > 0, "attend: empty heads");
    assert_eq!(
        queries.len() % row,
        0,
        "attend: queries are not [n, {heads}, {d}]"
    );
    let n = queries.len() / row;
    let len = past + n;
    assert_eq!(
        keys.len(),
        len * kv_heads * d,
        "attend: keys are not [{len}, {kv_heads}, {d}]"
    );
    assert_eq!(
        values.len(),
        keys.len(),
        "attend: values are not [{len}, {kv_heads}, {d}]"
    );
    assert_eq!(out.len(), n * row, "attend: out is not [{n}, {row}]");

    let group = heads / kv_heads;
    let task = |(idx, chunk): (usize, &mut [f32])| {
        let (i, kvh) = (idx / kv_heads, idx % kv_heads);
        let q = &queries[i * row + kvh * group * d..][..group * d];
        group_rows(isa, cfg, q, past + i, kvh, keys, values, chunk);
    };
    let visible: usize = (0..n).map(|i| visible(cfg, past + i).len()).sum();
    if visible * heads * d * 2 < PARALLEL_MIN_FMAS {
        out.chunks_mut(group * d).enumerate().for_each(task);
    } else {
        out.par_chunks_mut(group * d).enumerate().for_each(task);
    }
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
    };
    // Rows `t < nt` of `keys[first..]` at stride `ld` end at `first + (nt-1)*ld + d`
    // = `p*ld + kvh*d + d <= (past+n)*ld`: inside `keys` (checked by the caller's asserts).
    debug_assert!(first + (nt - 1) * ld + d <= keys.len());
    // SAFETY: `isa` is available (asserted by the caller); `q` holds `group` rows of `d`
    // floats; the key rows are inside `keys` (above); `scores` holds `group × nt` floats and is
    // owned here.
    unsafe { simd::gemm_cols(isa, &g, 0, nt, &mut Vec::new()) };

    for (r, s) in scores.chunks_mut(nt).enumerate() {
        for v in s.iter_mut() {
            *v *= cfg.scale;
            if let Some(cap) = cfg.softcap {
                *v = cap * (*v / cap).tanh();
            }
        }
        let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for v in s.iter_mut() {
            *v = (*v - max).exp();
        }
        let z = fixed_sum(s);
        let o = &mut out[r * d..][..d];
        simd::weighted_sum(isa, s, &values[first..], ld, o);
        for v in o.iter_mut() {
            *v /= z;
        }
    }
}
