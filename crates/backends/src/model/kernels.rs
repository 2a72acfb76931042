//! Who computes a model's heavy operations: sieve's own CPU kernels (`sieve-kernels`: a
//! matrix product and causal attention, each with one fixed reduction order, so that a row's
//! result never depends on the other rows of the batch, nor on the thread count), or the Burn
//! backend's operations (a GPU's, whose kernels choose their own order).

/// Where the linear layers and attention run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// `sieve-kernels` on the host (the CPU backends): batch invariant, the KV cache in host
    /// memory.
    Host,
    /// The Burn backend's own tensor operations (CUDA).
    Backend,
}

/// The values of a 2-D float tensor as row-major `f32` rows on the host (the backend's buffer
/// itself when it can be taken as it is).
pub(crate) fn to_rows<B: burn_tensor::backend::Backend>(x: burn_tensor::Tensor<B, 2>) -> Vec<f32> {
    x.into_data()
        .convert::<f32>()
        .into_vec::<f32>()
        .expect("converted to f32")
}

/// A `[n, width]` tensor holding the row-major `rows`.
pub(crate) fn from_rows<B: burn_tensor::backend::Backend>(
    rows: Vec<f32>,
    n: usize,
    width: usize,
    device: &B::Device,
) -> burn_tensor::Tensor<B, 2> {
    burn_tensor::Tensor::from_data(burn_tensor::TensorData::new(rows, [n, width]), device)
}

/// Buffers a host forward pass reuses from layer to layer (sized on first use, then
/// overwritten), so the large activations are not allocated, zeroed and faulted in again for
/// every layer.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// A sublayer's normalized input, `[n, hidden]`.
    pub h: Vec<f32>,
    /// Queries, keys and values, `[n, heads·d]`, `[n, kv_heads·d]` twice.
    pub q: Vec<f32>,
    /// See `q`.
    pub k: Vec<f32>,
    /// See `q`.
    pub v: Vec<f32>,
    /// Attention's output before `o_proj`, `[n, heads·d]`.
    pub attn: Vec<f32>,
    /// The MLP's gate and up projections, `[n, intermediate]`.
    pub gate: Vec<f32>,
    /// See `gate`.
    pub up: Vec<f32>,
    /// A sublayer's output, `[n, hidden]`.
    pub out: Vec<f32>,
}

/// Floats of slack a [`Scratch`] buffer keeps so that its window can start on a cache line.
const SLACK: usize = 16;

/// A window of `len` floats of `v` starting on a 64-byte boundary (so the matrix products
/// read it in place, without copying it to aligned rows first), growing `v` (with zeros) if
/// it is too short; whatever it held before is left for the caller to overwrite.
pub(crate) fn sized(v: &mut Vec<f32>, len: usize) -> &mut [f32] {
    if v.len() < len + SLACK {
        v.resize(len + SLACK, 0.0);
    }
    window_mut(v, len)
}

/// The window [`sized`] gives, to read it back.
pub(crate) fn window(v: &[f32], len: usize) -> &[f32] {
    let at = v.as_ptr().align_offset(64).min(SLACK);
    &v[at..at + len]
}

/// The window [`sized`] gives, to change it in place.
pub(crate) fn window_mut(v: &mut [f32], len: usize) -> &mut [f32] {
    let at = v.as_ptr().align_offset(64).min(SLACK);
    &mut v[at..at + len]
}
