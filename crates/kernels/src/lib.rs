//! # sieve-kernels
//!
//! CPU kernels whose results do not depend on the batch: a row of a matrix product, or a query
//! row of attention, comes out bit-for-bit the same whether it is computed alone or beside
//! other rows, on one thread or many, with AVX-512, AVX2 or plain scalar code.
//!
//! That holds because every dot product uses one reduction order that is a function of its
//! length alone ([`reference_dot`]): 16 partial sums, lane `l` taking the indices `≡ l (mod 16)`
//! in increasing order with a fused multiply-add, the last partial chunk padded with zeros, then
//! a fixed pairwise tree over the 16 lanes. The SIMD paths are register-tiled versions of that
//! same order (for prefill: several rows times several weight columns per register tile, over
//! a weight panel widened to `f32` once per call and kept in cache; for attention: many query
//! rows against keys transposed once per call); work is split between threads over output
//! columns (or query rows) only, never over the reduction.
//!
//! | item | job |
//! |---|---|
//! | [`matmul_nt`] | `x Wᵀ (+ b)` against a `[n, k]` weight kept in its checkpoint dtype (and [`matmul_nt_vec`]: into a new vector; [`matmul_nt_many`]: several weights over the same rows) |
//! | [`WeightView`], [`Weights`] | such a weight: borrowed bytes (maybe unaligned) or owned storage, as floats or GGML blocks ([`Format`]) |
//! | [`quant`] | quantized weights (GGML's Q4_0 … Q8_0 and K-quant blocks) multiplied where they lie, with the same batch-invariance promise (see its docs for the reduction order) |
//! | [`attend`] | causal attention of one sequence against its key/value cache (and [`attend_many`]: several sequences in one parallel section) |
//! | [`reference_dot`] | the reduction order, in plain scalar code |
//! | [`math`] | `exp` and SiLU in a fixed sequence of `f32` operations (vectorizable) |
//! | [`Isa`] | which instruction set a call uses (detected at run time) |
//! | [`set_threads`] | the size of the global thread pool the kernels run on |
//!
//! Threads: a parallel kernel call splits its work into tasks that the calling thread and a
//! team of helper threads take (`team`: helpers spin between calls rather than sleep, so the
//! few hundred small calls of a decode step cost no wake-ups), as many threads as the current
//! rayon pool has (the global one sized by [`set_threads`], unless the call is inside
//! [`rayon::ThreadPool::install`]); small problems stay on the calling thread.
#![warn(missing_docs)]

mod attend;
mod dtype;
mod error;
mod isa;
pub mod math;
mod matmul;
pub mod quant;
mod reference;
mod simd;
mod split;
mod team;
mod threads;
mod weights;

pub use attend::{
    attend, attend_many, attend_many_on, attend_on, Attention, CacheElement, KeysValues, Sequence,
};
pub use dtype::Dtype;
pub use error::{Error, Result};
pub use isa::Isa;
pub use matmul::{matmul_nt, matmul_nt_many, matmul_nt_on, matmul_nt_vec, Product};
pub use reference::{reference_dot, LANES};
pub use threads::{set_threads, threads};
pub use weights::{Format, Storage, WeightView, Weights};
