//! The AVX-512 entry points: the kernels of `avx2` compiled with AVX-512 F/BW/VL/DQ enabled
//! (EVEX encodings, 32 vector registers), and with AVX512-VNNI's `vpdpwssd` fusing each
//! sub-block's scale multiply-add and accumulation where the CPU has it. The integer sums are
//! the same exact values, so the bits are the reference's.

use super::avx2::{rows, Plain, Vnni};
use super::q8k::BlockQ8K;
use super::QuantType;

/// [`super::dot_rows`] with AVX-512 (no VNNI).
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ, AVX2, FMA and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")]
pub(super) unsafe fn dot_rows(ty: QuantType, w_row: &[u8], acts: &[BlockQ8K], out: &mut [f32]) {
    // SAFETY: this function's features include AVX2, the contract of `Plain`.
    unsafe { rows::<Plain>(ty, w_row, acts, out) }
}

/// [`super::dot_rows`] with AVX-512 and VNNI.
///
/// # Safety
/// The CPU has AVX-512 F/BW/VL/DQ, AVX512-VNNI, AVX2, FMA and F16C.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")]
pub(super) unsafe fn dot_rows_vnni(
    ty: QuantType,
    w_row: &[u8],
    acts: &[BlockQ8K],
    out: &mut [f32],
) {
    // SAFETY: this function's features include AVX512-VNNI and AVX512-VL, `Vnni`'s contract.
    unsafe { rows::<Vnni>(ty, w_row, acts, out) }
}
