//! Vectorizable kernels over logit slices: the maximum, a fast `exp`, and the sum of
//! exponentials (the softmax weights, exactly as every probability is computed; and a cheaper
//! estimate of their sum, [`fast_weight_sum_below`], with a proven bound on its distance, for
//! bounding mass where a decision does not need every weight). Written as fixed-width lane
//! loops that LLVM turns into SIMD on the baseline target (SSE2 on x86-64, NEON on aarch64),
//! so they need no `std`. The only `unsafe` is the AVX2 kernels of [`scan_at_least`],
//! [`scan_at_least_checked`] and [`positions_at_least`], the `rep stosd` of [`fill`] and the
//! `set_len` of the weights kernels, allowed there alone (the crate denies `unsafe_code`).
//!
//! No result depends on the target: every kernel does the same `f32` operations per value in
//! the same order (there is no fused multiply-add unless written, and none is), and every sum
//! adds in a fixed order, whatever width the compiler vectorizes to.
//!
//! One file per job: `max.rs` (sanitizing, the maximum, plain sums), `exp.rs` (the one
//! accurate `exp`), `weights.rs` (softmax weights and their sums, exact and fast), `scan.rs`
//! (threshold scans, with their AVX2 kernels) and `fill.rs` (writing a row).

mod exp;
mod fill;
pub(crate) mod max;
mod scan;
mod weights;

pub use exp::exp;
pub use fill::fill;
pub use max::{max, max_if_clean, none_nan_or_pos_inf, sanitize, sum};
pub use scan::{positions_at_least, scan_at_least, scan_at_least_checked, SCAN_BLOCK};
pub use weights::{
    exp_shifted_into, exp_shifted_to_vec, fast_weight_sum_below, fast_weight_sum_rounding,
    fast_weights_into, sum_f64, sum_f64_below, FAST_WEIGHT_MAX_DEPTH, FAST_WEIGHT_REL_BASE,
    FAST_WEIGHT_REL_PER_UNIT,
};

/// Number of independent lanes the kernels accumulate in.
const LANES: usize = 8;

#[cfg(test)]
mod tests;
