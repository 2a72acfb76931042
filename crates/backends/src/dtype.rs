//! `--dtype`: the element type the linear layers' weights are kept in, [`WeightDtype`]; and
//! `--kv-cache`: the element type of the key/value cache, [`KvDtype`].
//!
//! On the CPU backends a weight matrix is multiplied where it lies, in its own element type
//! (`sieve-kernels` widens `bf16`/`f16` to `f32` in registers and accumulates in `f32`), so
//! the default, [`WeightDtype::Auto`], keeps what the checkpoint holds: a `bf16` checkpoint
//! stays `bf16` in memory, half the bytes a decode step reads. The other choices convert the
//! matrices once, at load, into memory of their own:
//!
//! - `f32` widens `bf16`/`f16` exactly: the logits are bit for bit those of `auto` (the kernels
//!   widen the same values), at twice the memory and bandwidth. It exists for comparisons.
//! - `bf16` and `f16` narrow with round-to-nearest-even, as PyTorch's `.to(torch.bfloat16)`
//!   does, so the weights equal a checkpoint saved in that dtype by transformers; the logits
//!   then differ from `f32` by the rounding of the weights (the README states the tolerance
//!   measured against transformers in `bf16`).
//!
//! - [`WeightDtype::Quant`] (`--quantize TYPE`) quantizes every matrix once, at load, into
//!   GGML blocks of that type with llama.cpp's reference rounding, one matrix at a time (see
//!   [`quant_type_for`] for rows that are not whole blocks); the model then runs the
//!   quantized kernels, as on a GGUF file of that type.
//!
//! Norm weights, biases and everything computed stay `f32`. On CUDA the model computes in
//! `f32` tensors: only `auto` and `f32` are accepted there.

use std::fmt;
use std::str::FromStr;

use sieve_kernels::quant;
use sieve_kernels::{Dtype as KernelDtype, Weights};

/// The GGML block types `--quantize` takes (from `sieve-kernels`).
pub use sieve_kernels::quant::QuantType;

/// The element type of the weight matrices in memory (see the [module](self) docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightDtype {
    /// The checkpoint's own (`f32`, `bf16` or `f16`).
    #[default]
    Auto,
    /// `f32`.
    F32,
    /// `bf16`.
    Bf16,
    /// IEEE `f16`.
    F16,
    /// Quantized at load into blocks of this type (`--quantize`); a matrix whose rows are not
    /// whole blocks of it takes the type [`quant_type_for`] gives.
    Quant(QuantType),
}

impl WeightDtype {
    /// The kernels' element type for a float matrix stored as `stored` (with
    /// [`WeightDtype::Quant`], one that stays float: [`quant_type_for`] gave no type for
    /// its rows, so it keeps the stored type).
    pub fn resolve(self, stored: KernelDtype) -> KernelDtype {
        match self {
            WeightDtype::Auto | WeightDtype::Quant(_) => stored,
            WeightDtype::F32 => KernelDtype::F32,
            WeightDtype::Bf16 => KernelDtype::Bf16,
            WeightDtype::F16 => KernelDtype::F16,
        }
    }

    /// The name `--dtype` (or, for a quantized type, `--quantize`) takes.
    pub fn name(self) -> &'static str {
        match self {
            WeightDtype::Auto => "auto",
            WeightDtype::F32 => "f32",
            WeightDtype::Bf16 => "bf16",
            WeightDtype::F16 => "f16",
            WeightDtype::Quant(t) => t.name(),
        }
    }
}

/// The block type a matrix with rows of `k` elements is quantized to when `ty` is asked
/// for: `ty` itself when `k` is whole blocks of it; else the type llama.cpp's quantizer falls
/// back to for that row length (`llama_tensor_get_type`: Q4_K → Q5_0, Q5_K → Q5_1, Q6_K →
/// Q8_0, and Q2_K/Q3_K → Q4_0 here, standing in for its IQ4_NL of the same 4.5 bits per
/// weight, which the kernels do not compute), when `k` is whole blocks of that; `None` (keep
/// the float matrix) otherwise, where llama.cpp would use F16.
pub fn quant_type_for(ty: QuantType, k: usize) -> Option<QuantType> {
    let fits = |t: QuantType| k > 0 && k.is_multiple_of(t.block_len()) && quant::supported(t);
    if fits(ty) {
        return Some(ty);
    }
    let fallback = match ty {
        QuantType::Q2K | QuantType::Q3K => QuantType::Q4_0,
        QuantType::Q4K => QuantType::Q5_0,
        QuantType::Q5K => QuantType::Q5_1,
        QuantType::Q6K => QuantType::Q8_0,
        _ => return None,
    };
    fits(fallback).then_some(fallback)
}

impl fmt::Display for WeightDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl WeightDtype {
    /// Bytes a `[rows, cols]` matrix stored as the float `stored` takes in memory once loaded
    /// in `self` (what a decode step reads of it): its blocks under [`WeightDtype::Quant`]
    /// (of the type [`quant_type_for`] gives), else its elements in the resolved type.
    pub fn matrix_bytes(self, stored: KernelDtype, rows: usize, cols: usize) -> usize {
        let quantized = match self {
            WeightDtype::Quant(ty) => quant_type_for(ty, cols).and_then(|t| t.row_bytes(cols)),
            _ => None,
        };
        match quantized {
            Some(row_bytes) => rows * row_bytes,
            None => rows * cols * self.resolve(stored).size(),
        }
    }
}

/// A name that is not a dtype of its option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{name}`; expected one of: {expected}")]
pub struct UnknownDtype {
    /// The name given.
    pub name: String,
    /// The names the option takes.
    pub expected: &'static str,
}

impl FromStr for WeightDtype {
    type Err = UnknownDtype;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(WeightDtype::Auto),
            "f32" | "float32" => Ok(WeightDtype::F32),
            "bf16" | "bfloat16" => Ok(WeightDtype::Bf16),
            "f16" | "float16" => Ok(WeightDtype::F16),
            _ => Err(UnknownDtype {
                name: s.to_string(),
                expected: "auto, f32, bf16, f16",
            }),
        }
    }
}

/// The element type the key/value cache keeps (`--kv-cache`) on the CPU backends.
///
/// Decode attention reads every cached key and value of a sequence once per step, so with
/// several sequences or a long context the cache, not the weights, can be most of the bytes a
/// step reads. `bf16` and `f16` halve them: each key and value is rounded to nearest (ties to
/// even) as it is stored and widened exactly as the kernels read it, so outputs equal those
/// of an `f32` cache holding the rounded values, and remain independent of the batch.
///
/// - `f32` (the default) keeps keys and values exact: logits match transformers in `f32`.
/// - `bf16` keeps 8 significant bits and the full `f32` range: what transformers, vLLM and
///   mistral.rs keep for a `bf16` model.
/// - `f16` keeps 11 significant bits but overflows past ±65504 (to ±inf): llama.cpp's default
///   cache type.
///
/// CUDA keeps its cache in the backend's `f32` tensors: only `f32` is accepted there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvDtype {
    /// IEEE binary32.
    #[default]
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    F16,
}

impl KvDtype {
    /// The name `--kv-cache` takes.
    pub fn name(self) -> &'static str {
        match self {
            KvDtype::F32 => "f32",
            KvDtype::Bf16 => "bf16",
            KvDtype::F16 => "f16",
        }
    }

    /// Bytes per cached element.
    pub fn size(self) -> usize {
        match self {
            KvDtype::F32 => 4,
            KvDtype::Bf16 | KvDtype::F16 => 2,
        }
    }
}

impl fmt::Display for KvDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KvDtype {
    type Err = UnknownDtype;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "float32" => Ok(KvDtype::F32),
            "bf16" | "bfloat16" => Ok(KvDtype::Bf16),
            "f16" | "float16" => Ok(KvDtype::F16),
            _ => Err(UnknownDtype {
                name: s.to_string(),
                expected: "f32, bf16, f16",
            }),
        }
    }
}

/// `values` (row-major `[rows, cols]`) quantized into `ty` blocks with GGML's reference
/// rounding: the bytes of [`Weights::quantize_f32`], computed with the rows of a large matrix
/// split over the kernels' threads.
///
/// # Errors
/// As [`Weights::quantize_f32`].
pub(crate) fn quantize_matrix(
    values: &[f32],
    ty: QuantType,
    rows: usize,
    cols: usize,
) -> sieve_kernels::Result<Weights> {
    match quantize_in_parallel(values, ty, rows, cols) {
        Some(bytes) => {
            let len = bytes.len();
            Weights::quantized(std::sync::Arc::new(bytes), 0..len, ty, rows, cols)
        }
        None => Weights::quantize_f32(values, ty, rows, cols),
    }
}

/// `values` (`[rows, cols]`, `cols` whole blocks of `ty`) quantized into `ty` blocks with the
/// rows split over the kernels' threads: rows are quantized independently, so the bytes are
/// those of [`Weights::quantize_f32`] whatever the split. `None` when one thread would do (a
/// small matrix) or a part fails (a value that is not finite), for the caller to quantize the
/// whole matrix at once, which reports the failure with its row.
fn quantize_in_parallel(
    values: &[f32],
    ty: QuantType,
    rows: usize,
    cols: usize,
) -> Option<Vec<u8>> {
    const MIN_PER_THREAD: usize = 1 << 16;
    let row_bytes = ty.row_bytes(cols)?;
    let threads = sieve_kernels::threads()
        .min(rows)
        .min(values.len() / MIN_PER_THREAD);
    if threads < 2 || values.len() != rows.checked_mul(cols)? {
        return None;
    }
    let per = rows.div_ceil(threads);
    let mut out = vec![0u8; rows * row_bytes];
    let done = std::thread::scope(|scope| {
        let parts: Vec<_> = values
            .chunks(per * cols)
            .zip(out.chunks_mut(per * row_bytes))
            .map(|(x, o)| scope.spawn(move || sieve_kernels::quant::quantize_row(ty, x, o)))
            .collect();
        parts.into_iter().all(|p| {
            p.join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
                .is_ok()
        })
    });
    done.then_some(out)
}

/// `bytes` (little-endian elements of `from`) as little-endian elements of `to`: widening is
/// exact, narrowing rounds to nearest, ties to even (NaN stays NaN, overflow becomes ±inf).
pub(crate) fn convert(bytes: &[u8], from: KernelDtype, to: KernelDtype) -> Vec<u8> {
    let count = bytes.len() / from.size();
    let mut out = Vec::with_capacity(count * to.size());
    for i in 0..count {
        let x = from.get(bytes, i);
        match to {
            KernelDtype::F32 => out.extend_from_slice(&x.to_le_bytes()),
            KernelDtype::Bf16 => out.extend_from_slice(&half::bf16::from_f32(x).to_le_bytes()),
            KernelDtype::F16 => out.extend_from_slice(&half::f16::from_f32(x).to_le_bytes()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for d in [
            WeightDtype::Auto,
            WeightDtype::F32,
            WeightDtype::Bf16,
            WeightDtype::F16,
        ] {
            assert_eq!(d.name().parse::<WeightDtype>(), Ok(d));
        }
        assert_eq!("BFloat16".parse::<WeightDtype>(), Ok(WeightDtype::Bf16));
        let e = "int8".parse::<WeightDtype>().unwrap_err();
        assert!(e.to_string().contains("int8") && e.to_string().contains("bf16"));
        for d in [KvDtype::F32, KvDtype::Bf16, KvDtype::F16] {
            assert_eq!(d.name().parse::<KvDtype>(), Ok(d));
        }
        assert_eq!("Float16".parse::<KvDtype>(), Ok(KvDtype::F16));
        let e = "auto".parse::<KvDtype>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown dtype `auto`; expected one of: f32, bf16, f16"
        );
        // `--dtype` does not take a block type (that is `--quantize`).
        assert!("q8_0".parse::<WeightDtype>().is_err());
        assert_eq!(WeightDtype::Quant(QuantType::Q4K).name(), "q4_k");
        assert_eq!(
            WeightDtype::Quant(QuantType::Q8_0).resolve(KernelDtype::Bf16),
            KernelDtype::Bf16
        );
    }

    #[test]
    fn matrix_bytes_count_blocks_or_elements() {
        let q8 = WeightDtype::Quant(QuantType::Q8_0);
        // 576 = 18 blocks of 34 bytes per row.
        assert_eq!(q8.matrix_bytes(KernelDtype::Bf16, 10, 576), 10 * 18 * 34);
        // Q4_K on rows of 576 (not whole 256-blocks): Q5_0, 22 bytes per 32.
        let q4k = WeightDtype::Quant(QuantType::Q4K);
        assert_eq!(q4k.matrix_bytes(KernelDtype::Bf16, 2, 576), 2 * 18 * 22);
        assert_eq!(q4k.matrix_bytes(KernelDtype::Bf16, 2, 1536), 2 * 6 * 144);
        // Rows of 48 stay in the stored float type.
        assert_eq!(q8.matrix_bytes(KernelDtype::Bf16, 3, 48), 3 * 48 * 2);
        assert_eq!(
            WeightDtype::F32.matrix_bytes(KernelDtype::Bf16, 3, 48),
            3 * 48 * 4
        );
    }

    #[test]
    fn rows_that_are_not_whole_blocks_fall_back_as_llama_cpp_does() {
        use QuantType::*;
        assert_eq!(quant_type_for(Q4K, 512), Some(Q4K));
        assert_eq!(quant_type_for(Q8_0, 64), Some(Q8_0));
        assert_eq!(quant_type_for(Q4K, 96), Some(Q5_0));
        assert_eq!(quant_type_for(Q5K, 96), Some(Q5_1));
        assert_eq!(quant_type_for(Q6K, 96), Some(Q8_0));
        assert_eq!(quant_type_for(Q2K, 96), Some(Q4_0));
        assert_eq!(quant_type_for(Q3K, 32), Some(Q4_0));
        for t in QuantType::ALL {
            assert_eq!(quant_type_for(t, 48), None, "{t}");
            assert_eq!(quant_type_for(t, 0), None, "{t}");
        }
    }

    #[test]
    fn narrowing_rounds_to_nearest_even_and_widening_is_exact() {
        // 1 + 2^-8 is halfway between two bf16 values: ties to even (1.0); 1 + 3·2^-9 rounds
        // up to 1 + 2^-7.
        let xs = [
            1.0f32 + 2f32.powi(-8),
            1.0 + 3.0 * 2f32.powi(-9),
            -0.0,
            f32::NAN,
        ];
        let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
        let narrow = convert(&bytes, KernelDtype::F32, KernelDtype::Bf16);
        let back = convert(&narrow, KernelDtype::Bf16, KernelDtype::F32);
        let got: Vec<f32> = back
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(got[0], 1.0);
        assert_eq!(got[1], 1.0 + 2f32.powi(-7));
        assert!(got[2] == 0.0 && got[2].is_sign_negative());
        assert!(got[3].is_nan());
        // Widening then narrowing gives the bf16 bytes back.
        assert_eq!(convert(&back, KernelDtype::F32, KernelDtype::Bf16), narrow);
        let f16 = convert(&bytes, KernelDtype::F32, KernelDtype::F16);
        assert_eq!(KernelDtype::F16.get(&f16, 1), xs[1]); // exact in f16
    }

    #[test]
    fn quantizing_in_parallel_gives_the_bytes_of_one_pass() {
        let (rows, cols) = (300, 512);
        // A deterministic spread of magnitudes and signs.
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * (1.0 + (i % 13) as f32) * 1e-3)
            .collect();
        for ty in [
            QuantType::Q8_0,
            QuantType::Q4_1,
            QuantType::Q4K,
            QuantType::Q6K,
        ] {
            let whole = Weights::quantize_f32(&values, ty, rows, cols).unwrap();
            match quantize_in_parallel(&values, ty, rows, cols) {
                Some(bytes) => assert_eq!(bytes, whole.view().bytes(), "{ty}"),
                // One thread: the caller quantizes in one pass.
                None => assert_eq!(sieve_kernels::threads(), 1),
            }
        }
        let mut bad = values.clone();
        bad[rows * cols - 1] = f32::NAN;
        assert!(quantize_in_parallel(&bad, QuantType::Q8_0, rows, cols).is_none());
        assert!(quantize_in_parallel(&values[..64], QuantType::Q8_0, 2, 32).is_none());
    }
}
