//! The one reduction order every dot product in this crate uses, written as plain scalar code.
//!
//! For vectors of length `k`, padded with zeros to a multiple of [`LANES`]:
//!
//! 1. lane `l` (0..16) starts at `+0.0` and, for the indices `i ≡ l (mod 16)` in increasing
//!    order, does `acc[l] = fma(x[i], w[i], acc[l])` (one rounding per step; the padded
//!    positions do `fma(0, 0, acc)`);
//! 2. the 16 lanes are folded by halves: `acc[l] += acc[l + 8]` for `l < 8`, then `+4`, `+2`,
//!    `+1`; lane 0 is the result.
//!
//! The order depends on `k` alone, so it is the same for a row computed alone or in a batch,
//! on any thread, with 16-lane AVX-512 registers, pairs of 8-lane AVX2 registers or scalars.

/// Width of the partial-sum vector of the reduction order.
pub const LANES: usize = 16;

/// `Σ x[i]·w[i]` in this crate's fixed order, which depends on the length alone.
///
/// With `x` and `w` padded with zeros to a multiple of [`LANES`]:
///
/// 1. lane `l` (0..16) starts at `+0.0` and, for the indices `i ≡ l (mod 16)` in increasing
///    order, does `acc[l] = fma(x[i], w[i], acc[l])` (one rounding per step; the padded
///    positions do `fma(0, 0, acc)`);
/// 2. the 16 lanes are folded by halves: `acc[l] += acc[l + 8]` for `l < 8`, then `+4`, `+2`,
///    `+1`; lane 0 is the result.
///
/// # Panics
/// If `x` and `w` differ in length.
pub fn reference_dot(x: &[f32], w: &[f32]) -> f32 {
    assert_eq!(x.len(), w.len(), "reference_dot: lengths differ");
    let mut acc = [0f32; LANES];
    let padded = x.len().div_ceil(LANES) * LANES;
    for i in 0..padded {
        let (a, b) = if i < x.len() {
            (x[i], w[i])
        } else {
            (0.0, 0.0)
        };
        acc[i % LANES] = a.mul_add(b, acc[i % LANES]);
    }
    fold(acc)
}

/// The fixed pairwise tree over the 16 lanes.
#[inline(always)]
pub(crate) fn fold(mut acc: [f32; LANES]) -> f32 {
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            acc[l] += acc[l + half];
        }
        half /= 2;
    }
    acc[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_dots_are_exact() {
        assert_eq!(reference_dot(&[], &[]), 0.0);
        assert_eq!(reference_dot(&[2.0], &[3.0]), 6.0);
        let x: Vec<f32> = (1..=40).map(|i| i as f32).collect();
        let w = vec![1.0; 40];
        assert_eq!(reference_dot(&x, &w), 820.0);
    }

    #[test]
    fn order_is_lanes_then_tree() {
        // 1e8 + 1 - 1e8 in one lane loses the 1; across lanes the tree keeps it.
        let mut x = vec![0f32; 17];
        x[0] = 1e8;
        x[16] = -1e8;
        x[1] = 1.0;
        let w = vec![1f32; 17];
        assert_eq!(reference_dot(&x, &w), 1.0);
        x[16] = 1.0;
        x[1] = -1e8;
        // lane 0: 1e8 + 1 = 1e8 (rounded); lane 1: -1e8; the tree gives 0.
        assert_eq!(reference_dot(&x, &w), 0.0);
    }
}
