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
