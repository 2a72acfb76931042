//! The key/value cache: per layer, the rotated keys and the values of every position fed so
//! far, so that decoding a token attends to the past without recomputing it.

use std::sync::Arc;

use burn_tensor::backend::Backend;
use burn_tensor::Tensor;
use sieve_kernels::KeysValues;

use super::kv_elements::Elements;
use crate::dtype::KvDtype;

/// Keys and values of one layer (empty before the first forward pass): on the device as
/// `[kv_heads, len, head_dim]` tensors (the backend's kernels), or in host memory head-major,
/// `[kv_heads, capacity, head_dim]` (sieve's kernels, which append and truncate in place and
/// read each kv head as one stream; the positions a fork inherits are shared, see
/// [`KvCache::fork`]).
#[derive(Debug, Clone)]
pub struct LayerCache<B: Backend> {
    kv: Option<(Tensor<B, 3>, Tensor<B, 3>)>,
    host: HostKv,
}

/// Keys and values in host memory: the first positions frozen in `shared` (held by every
/// fork of this cache), the rest in `own`, which never grows past room for `max_positions`
/// in all (the model's context), so a full cache holds no spare room. A clone shares the
/// frozen positions and copies the rest.
#[derive(Debug, Clone)]
struct HostKv {
    shared: Option<Arc<HeadMajor>>,
    own: HeadMajor,
    max_positions: usize,
    /// The positions the caller said the sequence will hold ([`KvCache::reserve`]; 0: not
    /// said): while it stays within them, `own` grows to room for exactly that many instead
    /// of doubling.
    planned: usize,
}

/// Keys and values of consecutive positions, head-major: kv head `h`'s row of position `t`
/// at `(h · capacity + t) · head_dim` in `keys` and in `values`, positions `len..capacity`
/// unused, each stored as the cache's [`KvDtype`]. Appending past the capacity moves every
/// head to a larger one (double, so appends cost amortized constant time per position, but no
/// larger than a limit the caller gives).
#[derive(Debug, Clone)]
struct HeadMajor {
    keys: Elements,
    values: Elements,
    len: usize,
    capacity: usize,
    kv_heads: usize,
    head_dim: usize,
}

/// How a run of positions grows when it is full.
#[derive(Debug, Clone, Copy)]
enum Room {
    /// Double, to at most this many positions.
    AtMost(usize),
    /// To room for exactly this many (the positions the caller said it will hold).
    Exactly(usize),
}

/// The smallest capacity a host cache grows to: a few decode steps without a move.
const MIN_CAPACITY: usize = 16;

impl HeadMajor {
    /// An empty run of `dtype` elements, without room.
    fn empty(dtype: KvDtype) -> Self {
        HeadMajor::with_capacity(dtype, 0, 0, 0)
    }

    /// An empty run of `dtype` elements with room for `capacity` positions of `kv_heads` heads
    /// of `head_dim`.
    fn with_capacity(dtype: KvDtype, kv_heads: usize, head_dim: usize, capacity: usize) -> Self {
        let size = kv_heads * capacity * head_dim;
        HeadMajor {
            keys: Elements::zeros(dtype, size),
            values: Elements::zeros(dtype, size),
            len: 0,
            capacity,
            kv_heads,
            head_dim,
        }
    }

    /// The element type.
    fn dtype(&self) -> KvDtype {
        self.keys.dtype()
    }

    /// Appends `[n, kv_heads · head_dim]` position-major rows of keys and values (narrowed to
    /// the element type), growing as `room` says (never to fewer positions than needed).
    fn append(&mut self, k: &[f32], v: &[f32], kv_heads: usize, head_dim: usize, room: Room) {
        let width = kv_heads * head_dim;
        if width == 0 {
            return;
        }
        let n = k.len() / width;
        if self.len == 0 && (self.kv_heads, self.head_dim) != (kv_heads, head_dim) {
            *self = HeadMajor::with_capacity(self.dtype(), kv_heads, head_dim, 0);
        }
        let needed = self.len + n;
        if needed > self.capacity {
            let capacity = match room {
                Room::AtMost(limit) => (2 * self.capacity).max(MIN_CAPACITY).min(limit),
                Room::Exactly(planned) => planned,
            };
            self.grow(kv_heads, head_dim, capacity.max(needed));
        }
        let d = head_dim;
        for (i, (k, v)) in k.chunks_exact(width).zip(v.chunks_exact(width)).enumerate() {
            for h in 0..kv_heads {
                let at = (h * self.capacity + self.len + i) * d;
                self.keys.write(at, &k[h * d..][..d]);
                self.values.write(at, &v[h * d..][..d]);
            }
        }
        self.len += n;
    }

    /// Moves the positions held to room for `capacity` positions of `kv_heads` heads of
    /// `head_dim` (at least the positions held).
    fn grow(&mut self, kv_heads: usize, head_dim: usize, capacity: usize) {
        let mut grown = HeadMajor::with_capacity(self.dtype(), kv_heads, head_dim, capacity);
        grown.copy_from(self, self.len);
        *self = grown;
    }

    /// Appends the first `count` positions of `other` (the same head shape, room enough).
    fn copy_from(&mut self, other: &HeadMajor, count: usize) {
        let d = self.head_dim;
        for h in 0..self.kv_heads {
            let from = h * other.capacity * d..(h * other.capacity + count) * d;
            let to = (h * self.capacity + self.len) * d;
            self.keys.copy(to, &other.keys, from.clone());
            self.values.copy(to, &other.values, from);
        }
        self.len += count;
    }

    /// The positions `shared` then `own` in one run, exactly as long as both.
    fn joined(shared: &HeadMajor, own: &HeadMajor) -> Self {
        let (kv_heads, head_dim) = (own.kv_heads, own.head_dim);
        let capacity = shared.len + own.len;
        let mut joined = HeadMajor::with_capacity(own.dtype(), kv_heads, head_dim, capacity);
        joined.copy_from(shared, shared.len);
        joined.copy_from(own, own.len);
        joined
    }

    /// The first `len` positions, in a run of their own.
    fn prefix(&self, len: usize) -> Self {
        let mut kept = HeadMajor::with_capacity(self.dtype(), self.kv_heads, self.head_dim, len);
        kept.copy_from(self, len);
        kept
    }

    /// The positions held, as the kernels read them.
    fn view(&self) -> KeysValues<'_> {
        self.keys
            .head_major(&self.values, self.len, self.capacity, self.head_dim)
    }
}

impl HostKv {
    /// Positions in the shared run.
    fn split(&self) -> usize {
        self.shared.as_ref().map_or(0, |f| f.len)
    }

    /// Freezes every position held into the shared run, so clones hold them without a copy.
    /// Positions appended since the last freeze are joined to the shared ones (a copy of
    /// both) unless nothing was shared yet (a move).
    fn freeze(&mut self) {
        if self.own.len == 0 {
            return;
        }
        let empty = HeadMajor::empty(self.own.dtype());
        let own = std::mem::replace(&mut self.own, empty);
        let frozen = match self.shared.take() {
            None => own,
            Some(old) => HeadMajor::joined(&old, &own),
        };
        self.shared = Some(Arc::new(frozen));
    }

    /// Keeps the first `len` positions. Cutting into the shared run copies the kept positions
    /// out (the other holders keep theirs).
    fn truncate(&mut self, len: usize) {
        let split = self.split();
        if len < split {
            let shared = self.shared.take().unwrap_or_else(|| unreachable!());
            self.own = shared.prefix(len);
        } else {
            self.own.len = self.own.len.min(len - split);
        }
    }
}

impl<B: Backend> LayerCache<B> {
    /// An empty cache whose host part keeps `dtype` elements and grows to room for at most
    /// `max_positions` positions (more only if more are appended).
    fn new(max_positions: usize, dtype: KvDtype) -> Self {
        LayerCache {
            kv: None,
            host: HostKv {
                shared: None,
                own: HeadMajor::empty(dtype),
                max_positions,
                planned: 0,
            },
        }
    }

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

    /// Appends the new positions' keys and values in host memory (narrowed to the cache's
    /// [`KvDtype`]).
    ///
    /// # Shapes
    /// `k`, `v`: `[n, kv_heads · head_dim]`, position-major (as the projections write them).
    pub fn append_host(&mut self, k: &[f32], v: &[f32], kv_heads: usize, head_dim: usize) {
        let host = &mut self.host;
        let width = (kv_heads * head_dim).max(1);
        let split = host.split();
        let needed = host.own.len + k.len() / width;
        let planned = host.planned.min(host.max_positions).saturating_sub(split);
        let room = match needed <= planned {
            // Within the positions said: room for all of them at once.
            true => Room::Exactly(planned),
            false => Room::AtMost(host.max_positions.saturating_sub(split)),
        };
        host.own.append(k, v, kv_heads, head_dim, room);
    }

    /// Says the sequence will hold `positions` positions in all (see [`KvCache::reserve`]).
    fn reserve(&mut self, positions: usize) {
        self.host.planned = positions;
    }

    /// All keys and values held in host memory, in two runs: the positions shared with other
    /// forks (empty when none), then this cache's own. Both are empty before the first
    /// [`LayerCache::append_host`].
    pub fn host(&self) -> (KeysValues<'_>, KeysValues<'_>) {
        let host = &self.host;
        let shared = host
            .shared
            .as_deref()
            .map_or_else(KeysValues::default, HeadMajor::view);
        (shared, host.own.view())
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
    max_positions: usize,
    dtype: KvDtype,
}

impl<B: Backend> KvCache<B> {
    /// An empty cache for `num_layers` layers. Its host memory grows by doubling but never
    /// past room for `max_positions` positions (the model's context), so a full cache holds
    /// exactly what it needs. Host keys and values are stored as `dtype`.
    pub fn new(num_layers: usize, max_positions: usize, dtype: KvDtype) -> Self {
        KvCache {
            layers: (0..num_layers)
                .map(|_| LayerCache::new(max_positions, dtype))
                .collect(),
            len: 0,
            max_positions,
            dtype,
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
        *self = KvCache::new(self.layers.len(), self.max_positions, self.dtype);
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

    /// Says the sequence will hold `positions` positions in all (its prompt and the most
    /// tokens it may generate): while it stays within them, the host memory grows to room
    /// for exactly that many (at most the context) instead of doubling past them; beyond
    /// them it doubles again. What is held does not change.
    pub fn reserve(&mut self, positions: usize) {
        for layer in &mut self.layers {
            layer.reserve(positions);
        }
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
    use sieve_kernels::Dtype;

    use super::*;

    const KV_HEADS: usize = 2;
    const HEAD_DIM: usize = 3;
    const WIDTH: usize = KV_HEADS * HEAD_DIM;

    /// A one-layer cache holding `len` positions whose keys are `0, 1, 2, …` (position-major)
    /// and whose values are their negatives.
    fn prompt(len: usize) -> (KvCache<Flex>, Vec<f32>) {
        let rows: Vec<f32> = (0..len * WIDTH).map(|i| i as f32).collect();
        let mut cache = KvCache::new(1, usize::MAX, KvDtype::F32);
        append(&mut cache, &rows);
        (cache, rows)
    }

    fn append(cache: &mut KvCache<Flex>, rows: &[f32]) {
        let values: Vec<f32> = rows.iter().map(|x| -x).collect();
        cache.layers[0].append_host(rows, &values, KV_HEADS, HEAD_DIM);
        cache.advance(rows.len() / WIDTH);
    }

    /// Every key held, shared run then own, position-major as appended, and where the shared
    /// run lives (the values are checked to be the keys' negatives).
    fn keys(cache: &KvCache<Flex>) -> (Vec<f32>, *const HeadMajor) {
        let (shared, own) = cache.layers[0].host();
        let mut held = Vec::new();
        for run in [shared, own] {
            for t in 0..run.len() {
                for h in 0..KV_HEADS {
                    let (k, v) = (run.key(t, h), run.value(t, h));
                    assert_eq!(k.iter().map(|x| -x).collect::<Vec<_>>(), v);
                    held.extend_from_slice(&k);
                }
            }
        }
        let at = cache.layers[0]
            .host
            .shared
            .as_ref()
            .map_or(std::ptr::null(), Arc::as_ptr);
        (held, at)
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
        assert_eq!(keys(&a).0[10 * WIDTH..], [-1.0; WIDTH]);
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
        assert_eq!(keys(&a2).0[..10 * WIDTH], rows);
        assert_eq!(keys(&a2).0[10 * WIDTH..], [-4.0; WIDTH]);
    }

    #[test]
    fn appends_past_the_capacity_and_after_a_cut_keep_every_position() {
        let (mut cache, mut rows) = prompt(3);
        for step in 0..70 {
            let row: Vec<f32> = (0..WIDTH)
                .map(|i| 1000.0 + (step * WIDTH + i) as f32)
                .collect();
            append(&mut cache, &row);
            rows.extend_from_slice(&row);
            assert_eq!(keys(&cache).0, rows, "after {step} steps");
        }
        cache.truncate(20);
        rows.truncate(20 * WIDTH);
        assert_eq!(keys(&cache).0, rows);
        let chunk: Vec<f32> = (0..5 * WIDTH).map(|i| -7.0 - i as f32).collect();
        append(&mut cache, &chunk);
        rows.extend_from_slice(&chunk);
        assert_eq!((cache.len(), keys(&cache).0), (25, rows));
    }

    #[test]
    fn a_bf16_cache_holds_rows_rounded_and_its_forks_and_cuts_keep_the_type() {
        let mut cache = KvCache::<Flex>::new(1, usize::MAX, KvDtype::Bf16);
        // Steps of 2^-9 near 1: most are not bf16 values.
        let rows: Vec<f32> = (0..4 * WIDTH)
            .map(|i| 1.0 + i as f32 * 2f32.powi(-9))
            .collect();
        append(&mut cache, &rows);
        let rounded: Vec<f32> = rows
            .iter()
            .map(|&x| half::bf16::from_f32(x).to_f32())
            .collect();
        assert_ne!(rounded, rows);
        assert_eq!(keys(&cache).0, rounded);
        let mut fork = cache.fork();
        append(&mut fork, &rows[..WIDTH]);
        let (shared, own) = fork.layers[0].host();
        assert_eq!((shared.dtype(), own.dtype()), (Dtype::Bf16, Dtype::Bf16));
        assert_eq!(keys(&fork).0, [&rounded[..], &rounded[..WIDTH]].concat());
        fork.truncate(2);
        append(&mut fork, &rows[WIDTH..2 * WIDTH]);
        assert_eq!(fork.layers[0].host().1.dtype(), Dtype::Bf16);
        assert_eq!(
            keys(&fork).0,
            [&rounded[..2 * WIDTH], &rounded[WIDTH..2 * WIDTH]].concat()
        );
        fork.clear();
        append(&mut fork, &rows[..WIDTH]);
        assert_eq!(keys(&fork).0, rounded[..WIDTH]);
    }

    #[test]
    fn the_host_cache_grows_by_doubling_up_to_the_context() {
        let capacity = |cache: &KvCache<Flex>| cache.layers[0].host.own.capacity;
        let mut cache = KvCache::new(1, 100, KvDtype::F32);
        append(&mut cache, &[1.0; 30 * WIDTH]);
        assert_eq!(capacity(&cache), 30, "a prefill takes what it needs");
        append(&mut cache, &[2.0; WIDTH]);
        assert_eq!(capacity(&cache), 60, "a decode step doubles");
        append(&mut cache, &[3.0; 30 * WIDTH]);
        assert_eq!(capacity(&cache), 100, "doubling stops at the context");
        let mut fork = cache.fork();
        append(&mut fork, &[4.0; WIDTH]);
        assert_eq!(capacity(&fork), 16, "a fork's own run starts small");
        append(&mut fork, &[4.0; 20 * WIDTH]);
        assert_eq!(capacity(&fork), 32);
        append(&mut fork, &[5.0; 12 * WIDTH]);
        assert_eq!(
            capacity(&fork),
            39,
            "a fork's own run stops at what the context leaves"
        );
        assert_eq!(keys(&fork).0.len(), 94 * WIDTH);
    }

    #[test]
    fn a_reserved_cache_takes_room_for_the_positions_said_at_once() {
        let capacity = |cache: &KvCache<Flex>| cache.layers[0].host.own.capacity;
        let mut cache = KvCache::new(1, 100, KvDtype::F32);
        cache.reserve(40);
        append(&mut cache, &[1.0; 30 * WIDTH]);
        assert_eq!(capacity(&cache), 40, "the prefill takes room for all 40");
        append(&mut cache, &[2.0; 10 * WIDTH]);
        assert_eq!(capacity(&cache), 40, "no move within the positions said");
        append(&mut cache, &[3.0; WIDTH]);
        assert_eq!(capacity(&cache), 80, "past them it doubles again");
        assert_eq!(keys(&cache).0.len(), 41 * WIDTH);
        let mut big = KvCache::new(1, 100, KvDtype::F32);
        big.reserve(1_000);
        append(&mut big, &[1.0; 3 * WIDTH]);
        assert_eq!(capacity(&big), 100, "never past the context");
        let mut cleared = cache.clone();
        cleared.clear();
        append(&mut cleared, &[1.0; 3 * WIDTH]);
        assert_eq!(capacity(&cleared), 16, "clear forgets the hint");
    }
}
