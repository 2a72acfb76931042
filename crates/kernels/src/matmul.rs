//! `x Wᵀ + b` for a batch of rows against a `[n, k]` weight in its stored dtype, with one fixed
//! reduction order per output ([`crate::reference_dot`]), split over output columns between the
//! current rayon pool's threads.

use std::cell::RefCell;

use rayon::prelude::*;

use crate::simd::{self, Gemm};
use crate::{split, Isa, WeightView};

thread_local! {
    /// Prefill's widened weight panel, kept per thread between calls.
    static SCRATCH: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
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
    assert_eq!(
        out.len(),
        m * n,
        "matmul_nt: out is not [m, n] = [{m}, {n}]"
    );
    if let Some(b) = bias {
        assert_eq!(b.len(), n, "matmul_nt: bias is not [n] = [{n}]");
    }
    if m == 0 || n == 0 {
        return;
    }
    let g = Gemm {
        x: x.as_ptr(),
        ldx: k,
        m,
        k,
        w: w.bytes().as_ptr(),
        ldw: k * w.dtype().size(),
        dtype: w.dtype(),
        bias: bias.map_or(std::ptr::null(), <[f32]>::as_ptr),
        out: out.as_mut_ptr(),
        ldo: n,
    };
    let run = |cols: std::ops::Range<usize>| {
        SCRATCH.with(|s| {
            // SAFETY: `isa` is available (asserted); `x`, `w`, `bias` and `out` have the
            // lengths `g` describes (asserted, and `WeightView::new` checked `w`); `out` is
            // borrowed mutably for the whole call and every task gets its own column range,
            // so no two tasks write the same element.
            unsafe { simd::gemm_cols(isa, &g, cols.start, cols.end, &mut s.borrow_mut()) }
        })
    };
    let tasks = split::tasks(m, n, k, w.dtype(), rayon::current_num_threads());
    if tasks == 1 {
        run(0..n);
    } else {
        split::ranges(n, tasks).into_par_iter().for_each(run);
    }
}
