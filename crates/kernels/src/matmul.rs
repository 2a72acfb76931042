//! `x Wᵀ + b` for a batch of rows against a `[n, k]` weight in its stored dtype, with one fixed
//! reduction order per output ([`crate::reference_dot`]), split over output columns between the
//! threads of the kernels' team.

use std::cell::RefCell;

use crate::simd::{self, Gemm};
use crate::{split, Isa, WeightView, LANES};

/// Bytes of a cache line.
const LINE: usize = 64;
/// Above this many rows, rows are aligned to cache lines before the product (every
/// instruction set's decode path takes at most this many, and reads them in place).
const PADDED_ROWS: usize = 8;

/// Whether every row of `x` (`k` floats each) starts on a cache line.
fn lines_up(x: &[f32], k: usize) -> bool {
    k.is_multiple_of(LANES) && x.as_ptr().align_offset(LINE) == 0
}

thread_local! {
    /// Prefill's widened weight panel, kept per thread between calls.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
    /// Prefill's rows copied to cache-line starts, kept per calling thread between calls.
    static ROWS: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// `out[r*n + j] = Σ_i x[r*k + i] · w[j, i] (+ bias[j])` for `r < m`, `j < n`, with the widest
/// instruction set this CPU has ([`Isa::best`]).
///
/// Each output is [`crate::reference_dot`] of its row and its weight row, plus the bias: the
/// bits of row `r` depend only on `x`'s row `r` and `w`, not on `m`, on the other rows, on the
/// thread count or on the instruction set.
///
/// # Shapes
/// `x`: `[m, k]`, `w`: `[n, k]`, `bias`: `[n]`, `out`: `[m, n]`, all row-major.
///
/// # Panics
/// If a length does not match those shapes.
pub fn matmul_nt(x: &[f32], m: usize, w: &WeightView<'_>, bias: Option<&[f32]>, out: &mut [f32]) {
    matmul_nt_on(Isa::best(), x, m, w, bias, out)
}

/// [`matmul_nt`] with a chosen instruction set (every one gives the same bits; for tests and
/// benchmarks).
///
/// # Panics
/// If `isa` is not available on this CPU, or as [`matmul_nt`].
pub fn matmul_nt_on(
    isa: Isa,
    x: &[f32],
    m: usize,
    w: &WeightView<'_>,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let (n, k) = (w.n(), w.k());
    assert!(isa.is_available(), "{isa:?} is not available on this CPU");
    assert_eq!(x.len(), m * k, "matmul_nt: x is not [m, k] = [{m}, {k}]");
    check_output(m, n, bias, out);
    // SAFETY: `out` is `m · n` floats, borrowed mutably.
    unsafe { product(isa, x, m, &[(w, bias, out.as_mut_ptr())]) }
}

/// [`matmul_nt`] into a new vector (its elements are written once, never zeroed first).
///
/// # Panics
/// As [`matmul_nt`].
pub fn matmul_nt_vec(x: &[f32], m: usize, w: &WeightView<'_>, bias: Option<&[f32]>) -> Vec<f32> {
    let (n, k) = (w.n(), w.k());
    assert_eq!(x.len(), m * k, "matmul_nt: x is not [m, k] = [{m}, {k}]");
    if let Some(b) = bias {
        assert_eq!(b.len(), n, "matmul_nt: bias is not [n] = [{n}]");
    }
    let mut out = Vec::with_capacity(m * n);
    // SAFETY: the capacity is `m · n` floats; `product` writes every one of them (each column
    // range of every row goes to exactly one task, and every tile stores all its outputs),
    // so they are initialized before the length is set.
    unsafe {
        product(Isa::best(), x, m, &[(w, bias, out.as_mut_ptr())]);
        out.set_len(m * n);
    }
    out
}

/// One product of [`matmul_nt_many`]: the weight, its bias, and the output it fills.
pub type Product<'a, 'w> = (&'a WeightView<'w>, Option<&'a [f32]>, &'a mut [f32]);

/// Several products of the same rows: for each `(Wᵢ, bᵢ, outᵢ)` of `jobs` (all weights `k`
/// wide), `outᵢ = x Wᵢᵀ (+ bᵢ)` — what [`matmul_nt`] gives for each, bit for bit, with the
/// rows aligned once and every product's column ranges in one parallel section (the q/k/v or
/// gate/up projections of a layer).
///
/// # Shapes
/// `x`: `[m, k]`; `outᵢ`: `[m, nᵢ]` for a `[nᵢ, k]` weight, `bᵢ`: `[nᵢ]`.
///
/// # Panics
/// If a weight's `k` differs from the first's, or a length does not match those shapes.
pub fn matmul_nt_many(x: &[f32], m: usize, jobs: &mut [Product<'_, '_>]) {
    let Some(k) = jobs.first().map(|(w, ..)| w.k()) else {
        return;
    };
    assert_eq!(x.len(), m * k, "matmul_nt: x is not [m, k] = [{m}, {k}]");
    for (w, bias, out) in jobs.iter() {
        let n = w.n();
        assert_eq!(w.k(), k, "matmul_nt_many: weights of different widths");
        check_output(m, n, *bias, out);
    }
    let raw: Vec<_> = jobs
        .iter_mut()
        .map(|(w, bias, out)| (*w, *bias, out.as_mut_ptr()))
        .collect();
    // SAFETY: every output is `m · n` floats for its weight (asserted), borrowed mutably.
    unsafe { product(Isa::best(), x, m, &raw) }
}

/// The body of [`matmul_nt_on`] for one or several weights of the same width `k`: for each
/// `(w, bias, out)` of `jobs`, `out[r * n + j]` for every `r < m`, `j < n` (`n` that weight's
/// rows). Every product's column ranges go to one parallel section.
///
/// # Safety
/// Every `out` is writable for `m · n` floats (its weight's `n`), and nothing else reads or
/// writes them during the call; the other arguments are as [`matmul_nt_on`] checks them
/// (`isa` available, `x` of `m · k` floats, each `bias` of its `n`, every `w` `k` wide).
unsafe fn product(
    isa: Isa,
    x: &[f32],
    m: usize,
    jobs: &[(&WeightView<'_>, Option<&[f32]>, *mut f32)],
) {
    let Some(k) = jobs.first().map(|(w, ..)| w.k()) else {
        return;
    };
    if m == 0 {
        return;
    }
    // Quantized weights go to their own driver (the activations quantized once for all of
    // them); each job's result does not depend on which others share the call.
    if jobs.iter().any(|(w, ..)| w.quant().is_some()) {
        let (quant, float): (Vec<_>, Vec<_>) = jobs
            .iter()
            .copied()
            .partition(|(w, ..)| w.quant().is_some());
        // SAFETY: the caller's contract, for each subset of the jobs.
        unsafe {
            crate::quant::product(isa, x, m, &quant);
            product(isa, x, m, &float);
        }
        return;
    }
    // Prefill reads every row once per group of weight columns: give it rows that start on
    // cache lines (one copy here, shared by all tasks, into a buffer this thread keeps; taken
    // out of its slot for the call, so a call nested in a task below would just make its
    // own).
    let mut padded = Vec::new();
    let (x, ldx) = if m > PADDED_ROWS && !lines_up(x, k) {
        let ldx = k.div_ceil(LANES) * LANES;
        padded = ROWS.with(|r| std::mem::take(&mut *r.borrow_mut()));
        // Every row and its padding is written below: only growth needs filling here.
        let len = m * ldx + LANES;
        if padded.len() < len {
            padded.resize(len, 0.0);
        }
        let skip = padded.as_ptr().align_offset(LINE).min(LANES);
        for (dst, src) in padded[skip..].chunks_exact_mut(ldx).zip(x.chunks_exact(k)) {
            dst[..k].copy_from_slice(src);
            dst[k..].fill(0.0);
        }
        (&padded[skip..], ldx)
    } else {
        (x, k)
    };
    let gemms: Vec<Gemm> = jobs
        .iter()
        .map(|&(w, bias, out)| Gemm {
            x: x.as_ptr(),
            ldx,
            m,
            k,
            w: w.bytes().as_ptr(),
            ldw: k * w.dtype().size(),
            dtype: w.dtype(),
            bias: bias.map_or(std::ptr::null(), <[f32]>::as_ptr),
            out,
            ldo: w.n(),
            ahead_cols: 0,
        })
        .collect();
    let run = |(i, cols): (usize, std::ops::Range<usize>)| {
        SCRATCH.with(|s| {
            // SAFETY: `isa` is available (asserted); `x` holds `m` rows of `k` floats at stride
            // `ldx` (asserted, or built so above); each `w`, `bias` and `out` has the lengths
            // its `Gemm` describes (asserted, and `WeightView::new` checked `w`); the outputs
            // are the caller's alone for the call and every task gets its own column range
            // of one of them, so no two tasks write the same element.
            unsafe { simd::gemm_cols(isa, &gemms[i], cols.start, cols.end, &mut s.borrow_mut()) }
        })
    };
    let threads = rayon::current_num_threads();
    let mut tasks = Vec::new();
    for (i, (w, ..)) in jobs.iter().enumerate() {
        let n = w.n();
        if n > 0 {
            let t = split::tasks(m, n, k, k * w.dtype().size(), threads);
            tasks.extend(split::ranges(n, t).into_iter().map(|r| (i, r)));
        }
    }
    crate::team::for_each(tasks.len(), &|t| run(tasks[t].clone()));
    if padded.capacity() > 0 {
        ROWS.with(|r| *r.borrow_mut() = padded);
    }
}

/// Panics unless `out` is `[m, n]` and `bias`, when given, `[n]`.
fn check_output(m: usize, n: usize, bias: Option<&[f32]>, out: &[f32]) {
    assert_eq!(
        out.len(),
        m * n,
        "matmul_nt: out is not [m, n] = [{m}, {n}]"
    );
    if let Some(b) = bias {
        assert_eq!(b.len(), n, "matmul_nt: bias is not [n] = [{n}]");
    }
}
