//! The key/value cache: per layer, the rotated keys and the values of every position fed so
//! far, so that decoding a token attends to the past without recomputing it.

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

/// Keys and values of one layer (empty before the first forward pass): on the device as
/// `[kv_heads, len, head_dim]` tensors (the backend's kernels), or in host memory as
/// `[len, kv_heads·head_dim]` rows (sieve's kernels, which append and truncate in place).
#[derive(Debug, Clone)]
pub struct LayerCache<B: Backend> {
    kv: Option<(Tensor<B, 3>, Tensor<B, 3>)>,
    host: HostKv,
}

/// Keys and values in host memory, one row of `width` values per position.
#[derive(Debug, Default)]
struct HostKv {
    keys: Vec<f32>,
    values: Vec<f32>,
    width: usize,
}

impl Clone for HostKv {
    /// A copy with room to grow: a fork (parallel samples, beams) appends its next rows in
    /// place. A plain `Vec` clone has no spare room, so the fork's first append moved its whole
    /// cache to a fresh buffer, paying the copy and the page faults twice: the first step of 8
    /// forks of a 256-token prompt took 45 ms, the steady ones 20 ms.
    fn clone(&self) -> Self {
        let roomy = |v: &Vec<f32>| {
            let mut copy = Vec::with_capacity(v.capacity().max(2 * v.len()));
            copy.extend_from_slice(v);
            copy
        };
        HostKv {
            keys: roomy(&self.keys),
            values: roomy(&self.values),
            width: self.width,
        }
    }
}

impl<B: Backend> Default for LayerCache<B> {
    fn default() -> Self {
        LayerCache {
            kv: None,
            host: HostKv::default(),
        }
    }
}

impl<B: Backend> LayerCache<B> {
    /// Appends the new positions' keys and values and returns all of them.
    ///
    /// # Shapes
    /// `k`, `v`: `[kv_heads, n, head_dim]` → two `[kv_heads, len + n, head_dim]`.
    pub fn append(&mut self, k: Tensor<B, 3>, v: Tensor<B, 3>) -> (Tensor<B, 3>, Tensor<B, 3>) {
        let (k, v) = match self.kv.take() {
            None => (k, v),
            Some((pk, pv)) => (Tensor::cat(vec![pk, k], 1), Tensor::cat(vec![pv, v], 1)),
        };
        self.kv = Some((k.clone(), v.clone()));
        (k, v)
    }

    /// Appends the new positions' keys and values in host memory (rows of `width` =
    /// `kv_heads·head_dim` values) and returns all keys and all values held.
    ///
    /// # Shapes
    /// `k`, `v`: `[n, width]` → two `[len + n, width]`.
    pub fn append_host(&mut self, k: &[f32], v: &[f32], width: usize) -> (&[f32], &[f32]) {
        let host = &mut self.host;
        host.width = width;
        host.keys.extend_from_slice(k);
        host.values.extend_from_slice(v);
        (&host.keys, &host.values)
    }

    /// All keys and all values held in host memory (`[len, width]` each; empty before the
    /// first [`LayerCache::append_host`]).
    pub fn host(&self) -> (&[f32], &[f32]) {
        (&self.host.keys, &self.host.values)
    }

    /// Keeps the first `len` positions (fewer held: nothing changes).
    ///
    /// # Shapes
    /// `[kv_heads, held, head_dim]` → `[kv_heads, min(len, held), head_dim]`.
    pub fn truncate(&mut self, len: usize) {
        let host = &mut self.host;
        host.keys.truncate(len * host.width);
        host.values.truncate(len * host.width);
        if let Some((k, v)) = self.kv.take() {
            let held = k.dims()[1];
            self.kv = match len.min(held) {
                0 => None,
                n if n == held => Some((k, v)),
                n => Some((k.narrow(1, 0, n), v.narrow(1, 0, n))),
            };
        }
    }
}

/// The cache of a whole model: one [`LayerCache`] per layer and the number of positions held.
#[derive(Debug, Clone)]
pub struct KvCache<B: Backend> {
    layers: Vec<LayerCache<B>>,
    len: usize,
}

impl<B: Backend> KvCache<B> {
    /// An empty cache for `num_layers` layers.
    pub fn new(num_layers: usize) -> Self {
        KvCache {
            layers: (0..num_layers).map(|_| LayerCache::default()).collect(),
            len: 0,
        }
    }

    /// Number of positions held (the position of the next token).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Forgets every position.
    pub fn clear(&mut self) {
        let n = self.layers.len();
        *self = KvCache::new(n);
    }

    /// Keeps the first `len` positions of every layer (the rollback of speculative decoding:
    /// the next token fed is at position `len`). Asking for more than is held changes
    /// nothing.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        for layer in &mut self.layers {
            layer.truncate(len);
        }
        self.len = len;
    }

    /// The layers' caches, to pass one to each layer in a forward pass.
    pub(crate) fn layers_mut(&mut self) -> &mut [LayerCache<B>] {
        &mut self.layers
    }

    /// Records that a forward pass appended `n` positions to every layer.
    pub(crate) fn advance(&mut self, n: usize) {
        self.len += n;
    }
}

#[cfg(test)]
mod tests {
    use burn_flex::Flex;

    use super::*;

    #[test]
    fn a_fork_appends_in_place_and_leaves_the_original_alone() {
        let width = 4;
        let mut cache = LayerCache::<Flex>::default();
        let prompt: Vec<f32> = (0..10 * width).map(|i| i as f32).collect();
        cache.append_host(&prompt, &prompt, width);
        let mut fork = cache.clone();
        let before = fork.host().0.as_ptr();
        let row = [-1.0; 4];
        let (keys, values) = fork.append_host(&row, &row, width);
        assert_eq!(
            keys.as_ptr(),
            before,
            "the fork's first append moved its cache"
        );
        assert_eq!(&keys[..prompt.len()], &prompt[..]);
        assert_eq!(&values[prompt.len()..], &row);
        assert_eq!(cache.host().0, &prompt[..]);
    }
}
