//! The key/value cache: per layer, the rotated keys and the values of every position fed so
//! far, so that decoding a token attends to the past without recomputing it.

use std::sync::Arc;

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;
use sieve_kernels::KeysValues;

/// Keys and values of one layer (empty before the first forward pass): on the device as
/// `[kv_heads, len, head_dim]` tensors (the backend's kernels), or in host memory as
/// `[len, kv_heads·head_dim]` rows (sieve's kernels, which append and truncate in place; the
/// rows a fork inherits are shared, see [`KvCache::fork`]).
#[derive(Debug, Clone)]
pub struct LayerCache<B: Backend> {
    kv: Option<(Tensor<B, 3>, Tensor<B, 3>)>,
    host: HostKv,
}

/// Keys and values in host memory, one row of `width` values per position: the first
/// positions frozen in `shared` (held by every fork of this cache), the rest in `keys` and
/// `values`. A clone shares the frozen rows and copies the rest.
#[derive(Debug, Default, Clone)]
struct HostKv {
    shared: Option<Arc<Frozen>>,
    keys: Vec<f32>,
    values: Vec<f32>,
    width: usize,
}

/// Rows no one appends to any more: the positions a cache had when it was forked.
#[derive(Debug)]
struct Frozen {
    keys: Vec<f32>,
    values: Vec<f32>,
}

impl HostKv {
    /// Positions in the shared rows.
    fn split(&self) -> usize {
        match &self.shared {
            Some(f) if self.width > 0 => f.keys.len() / self.width,
            _ => 0,
        }
    }

    /// Freezes every row held into the shared part, so clones hold them without a copy. Rows
    /// appended since the last freeze are joined to the shared ones (a copy of both) unless
    /// nothing was shared yet (a move).
    fn freeze(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let (keys, values) = match self.shared.take() {
            None => (
                std::mem::take(&mut self.keys),
                std::mem::take(&mut self.values),
            ),
            Some(old) => (
                [old.keys.as_slice(), &self.keys].concat(),
                [old.values.as_slice(), &self.values].concat(),
            ),
        };
        self.keys.clear();
        self.values.clear();
        self.shared = Some(Arc::new(Frozen { keys, values }));
    }

    /// Keeps the first `len` positions. Cutting into the shared rows copies the kept ones
    /// out (the other holders keep theirs).
    fn truncate(&mut self, len: usize) {
        let split = self.split();
        if len < split {
            let shared = self.shared.take().unwrap_or_else(|| unreachable!());
            self.keys = shared.keys[..len * self.width].to_vec();
            self.values = shared.values[..len * self.width].to_vec();
        } else {
            self.keys.truncate((len - split) * self.width);
            self.values.truncate((len - split) * self.width);
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
    /// `kv_heads·head_dim` values).
    ///
    /// # Shapes
    /// `k`, `v`: `[n, width]`.
    pub fn append_host(&mut self, k: &[f32], v: &[f32], width: usize) {
        let host = &mut self.host;
        host.width = width;
        host.keys.extend_from_slice(k);
        host.values.extend_from_slice(v);
    }

    /// All keys and values held in host memory, in two runs: the rows shared with other
    /// forks (`[split, width]`; empty when none), then this cache's own (`[len − split,
    /// width]`). Both are empty before the first [`LayerCache::append_host`].
    pub fn host(&self) -> (KeysValues<'_>, KeysValues<'_>) {
        let host = &self.host;
        let shared = match &host.shared {
            Some(f) => KeysValues {
                keys: &f.keys,
                values: &f.values,
            },
            None => KeysValues::default(),
        };
        let own = KeysValues {
            keys: &host.keys,
            values: &host.values,
        };
        (shared, own)
    }

    /// Keeps the first `len` positions (fewer held: nothing changes).
    ///
    /// # Shapes
    /// `[kv_heads, held, head_dim]` → `[kv_heads, min(len, held), head_dim]`.
    pub fn truncate(&mut self, len: usize) {
        self.host.truncate(len);
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

    /// A copy for a new sequence continuing from the same positions (parallel samples, beams,
    /// the server's `n`). The host rows held so far are frozen and shared between the two (no
    /// copy when nothing was shared before), so the prompt of `k` forks is held once and
    /// attention reads each of its keys and values once for all of them
    /// (`sieve_kernels::attend_many`); device tensors are reference-counted already.
    pub fn fork(&mut self) -> Self {
        for layer in &mut self.layers {
            layer.host.freeze();
        }
        self.clone()
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

    const WIDTH: usize = 4;

    /// A one-layer cache holding `len` positions whose keys and values are `0, 1, 2, …`.
    fn prompt(len: usize) -> (KvCache<Flex>, Vec<f32>) {
        let rows: Vec<f32> = (0..len * WIDTH).map(|i| i as f32).collect();
        let mut cache = KvCache::new(1);
        cache.layers[0].append_host(&rows, &rows, WIDTH);
        cache.advance(len);
        (cache, rows)
    }

    fn append(cache: &mut KvCache<Flex>, row: &[f32]) {
        cache.layers[0].append_host(row, row, WIDTH);
        cache.advance(row.len() / WIDTH);
    }

    /// Every key held, shared run then own, and where the shared run lives (the values,
    /// appended equal to the keys, are checked to be held alike).
    fn keys(cache: &KvCache<Flex>) -> (Vec<f32>, *const f32) {
        let (shared, own) = cache.layers[0].host();
        assert_eq!((shared.values, own.values), (shared.keys, own.keys));
        ([shared.keys, own.keys].concat(), shared.keys.as_ptr())
    }

    #[test]
    fn forks_share_the_prompt_and_append_their_own_rows() {
        let (mut cache, rows) = prompt(10);
        let mut a = cache.fork();
        let b = cache.fork();
        let (held, at) = keys(&cache);
        assert_eq!(held, rows);
        assert_eq!(keys(&a).1, at, "the fork copied the prompt");
        assert_eq!(keys(&b).1, at, "the fork copied the prompt");
        append(&mut a, &[-1.0; WIDTH]);
        assert_eq!(keys(&a).0, [rows.as_slice(), &[-1.0; WIDTH]].concat());
        assert_eq!(keys(&cache).0, rows, "a fork's append reached the original");
        assert_eq!(keys(&b).0, rows, "a fork's append reached its sibling");
        append(&mut cache, &[-2.0; WIDTH]);
        assert_eq!(keys(&a).0[40..], [-1.0; WIDTH]);
    }

    #[test]
    fn a_fork_of_a_fork_and_a_cut_into_the_shared_rows_keep_everyone_whole() {
        let (mut cache, rows) = prompt(10);
        let mut a = cache.fork();
        append(&mut a, &[-1.0; WIDTH]);
        let mut a2 = a.fork();
        let grown = [rows.as_slice(), &[-1.0; WIDTH]].concat();
        assert_eq!(keys(&a2).0, grown);
        assert_eq!(keys(&a2).1, keys(&a).1, "the second fork copied");
        assert_ne!(
            keys(&a2).1,
            keys(&cache).1,
            "the first prompt was written to"
        );
        a.truncate(4);
        assert_eq!((a.len(), keys(&a).0), (4, rows[..4 * WIDTH].to_vec()));
        append(&mut a, &[-3.0; WIDTH]);
        assert_eq!(keys(&a2).0, grown);
        assert_eq!(keys(&cache).0, rows);
        a2.truncate(10);
        append(&mut a2, &[-4.0; WIDTH]);
        assert_eq!(keys(&a2).0[..40], rows);
        assert_eq!(keys(&a2).0[40..], [-4.0; WIDTH]);
    }
}
