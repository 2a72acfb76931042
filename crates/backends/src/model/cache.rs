//! The key/value cache: per layer, the rotated keys and the values of every position fed so
//! far, so that decoding a token attends to the past without recomputing it.

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;

/// Keys and values of one layer, `[kv_heads, len, head_dim]` each (empty before the first
/// forward pass).
#[derive(Debug, Clone)]
pub struct LayerCache<B: Backend> {
    kv: Option<(Tensor<B, 3>, Tensor<B, 3>)>,
}

impl<B: Backend> Default for LayerCache<B> {
    fn default() -> Self {
        LayerCache { kv: None }
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

    /// Keeps the first `len` positions (fewer held: nothing changes).
    ///
    /// # Shapes
    /// `[kv_heads, held, head_dim]` → `[kv_heads, min(len, held), head_dim]`.
    pub fn truncate(&mut self, len: usize) {
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
