//! The additive attention mask: 0 where a query may attend to a key, `-inf` elsewhere
//! (causal, and limited to a sliding window when the layer has one).

use burn_tensor::backend::Backend;
use burn_tensor::{Tensor, TensorData};

/// Whether the query at absolute position `q` may attend to the key at position `k`:
/// `k ≤ q`, and `q − k < window` when there is a window (transformers'
/// `sliding_window_overlay`: `kv_idx > q_idx − sliding_window`).
pub fn may_attend(q: usize, k: usize, window: Option<usize>) -> bool {
    k <= q && window.is_none_or(|w| q - k < w)
}

/// Whether `n` new queries after `past` cached positions need a mask at all (a single query
/// with no window sees every key).
pub fn needs_mask(past: usize, n: usize, window: Option<usize>) -> bool {
    n > 1 || window.is_some_and(|w| past + n > w)
}

/// The mask for `n` queries at positions `past ..` against keys `0 .. past + n`, with the rows
/// repeated `groups` times (one block per query head sharing a key/value head).
///
/// # Shapes
/// → `[1, groups·n, past + n]`.
pub fn attention_mask<B: Backend>(
    past: usize,
    n: usize,
    groups: usize,
    window: Option<usize>,
    device: &B::Device,
) -> Tensor<B, 3> {
    let total = past + n;
    let mut block = vec![0f32; n * total];
    for i in 0..n {
        for k in 0..total {
            if !may_attend(past + i, k, window) {
                block[i * total + k] = f32::NEG_INFINITY;
            }
        }
    }
    let mut rows = Vec::with_capacity(groups * block.len());
    for _ in 0..groups {
        rows.extend_from_slice(&block);
    }
    Tensor::from_data(TensorData::new(rows, [1, groups * n, total]), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_and_windowed_visibility() {
        assert!(may_attend(3, 3, None) && may_attend(3, 0, None) && !may_attend(3, 4, None));
        // A window of 2 shows the query itself and one key before it.
        assert!(may_attend(5, 5, Some(2)) && may_attend(5, 4, Some(2)));
        assert!(!may_attend(5, 3, Some(2)));
    }

    #[test]
    fn single_queries_skip_the_mask_unless_a_window_cuts() {
        assert!(!needs_mask(10, 1, None));
        assert!(needs_mask(0, 2, None));
        assert!(!needs_mask(3, 1, Some(4)));
        assert!(needs_mask(4, 1, Some(4)));
    }
}
