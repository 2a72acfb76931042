//! The legacy types' dot products: the scalar reference (it defines the bits), the kernel
//! paths each [`Isa`] maps to, and the dispatch.

use super::act::ActRow;
use super::blocks::{self, QK};
use super::{sum_blocks, QuantType};
use crate::Isa;

/// Which legacy dot-product kernel runs: every one gives the scalar reference's bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// The scalar reference.
    Scalar,
    /// AVX2 `vpmaddubsw` + `vpmaddwd`, one block per 256-bit register.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-VNNI `vpdpbusd` on 256-bit registers.
    #[cfg(target_arch = "x86_64")]
    AvxVnni,
    /// AVX-512 BW `vpmaddubsw` + `vpmaddwd`, two blocks per 512-bit register.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX-512 VNNI `vpdpbusd`, two blocks per 512-bit register.
    #[cfg(target_arch = "x86_64")]
    Avx512Vnni,
}

impl Kernel {
    /// The fastest kernel of `isa`'s family this CPU runs (`Scalar` if it lacks `isa`).
    pub(crate) fn of(isa: Isa) -> Kernel {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if isa.is_available() => {
                #[cfg(test)]
                if NO_VNNI.load(std::sync::atomic::Ordering::Relaxed) {
                    return Kernel::Avx2;
                }
                if std::arch::is_x86_feature_detected!("avxvnni") {
                    Kernel::AvxVnni
                } else {
                    Kernel::Avx2
                }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if isa.is_available() => {
                #[cfg(test)]
                if NO_VNNI.load(std::sync::atomic::Ordering::Relaxed) {
                    return Kernel::Avx512;
                }
                if std::arch::is_x86_feature_detected!("avx512vnni") {
                    Kernel::Avx512Vnni
                } else {
                    Kernel::Avx512
                }
            }
            _ => Kernel::Scalar,
        }
    }

    /// Every kernel this CPU can run (for tests).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut all = vec![Kernel::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if Isa::Avx2.is_available() {
                all.push(Kernel::Avx2);
                if std::arch::is_x86_feature_detected!("avxvnni") {
                    all.push(Kernel::AvxVnni);
                }
            }
            if Isa::Avx512.is_available() {
                all.push(Kernel::Avx512);
                if std::arch::is_x86_feature_detected!("avx512vnni") {
                    all.push(Kernel::Avx512Vnni);
                }
            }
        }
        all
    }
}

/// Set by the timing tests to run AVX2 without AVX-VNNI, and AVX-512 without AVX-512 VNNI,
/// on a CPU that has them (the bits are the same either way).
#[cfg(test)]
pub(crate) static NO_VNNI: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Rows of activations one pass over a weight row serves (prefill reuses each unpacked
/// weight group across this many rows).
pub(crate) const TILE_ROWS: usize = 4;

/// A block's contribution from its exact integer sum (the contract's formulas, see the module
/// docs of `quant`).
#[inline(always)]
pub(crate) fn contribution(offset: bool, sumi: i32, dw: f32, mw: f32, da: f32, sa: f32) -> f32 {
    let p = dw * da;
    if offset {
        p.mul_add(sumi as f32, mw * sa)
    } else {
        p * sumi as f32
    }
}

/// The scalar reference: `w_row` (whole blocks of a legacy `ty`) against one activation row.
pub(crate) fn reference(ty: QuantType, w_row: &[u8], a: ActRow<'_>) -> f32 {
    let offset = ty.has_offset();
    sum_blocks(
        w_row
            .chunks_exact(ty.block_bytes())
            .enumerate()
            .map(|(b, block)| {
                let (q, dw, mw) = blocks::unpack(ty, block);
                let sumi: i32 = (0..QK).map(|e| q[e] * i32::from(a.q(b, e))).sum();
                contribution(offset, sumi, dw, mw, a.d_of(b), a.s_of(b))
            }),
    )
}

/// `out[i] = ` the dot product of `w_row` with `rows[i]`, for `i < rows.len() ≤`
/// [`TILE_ROWS`], on `kernel` (which this CPU must run: [`Kernel::of`] gives only such).
pub(crate) fn dot_rows(
    kernel: Kernel,
    ty: QuantType,
    w_row: &[u8],
    rows: &[ActRow<'_>],
    out: &mut [f32],
) {
    debug_assert!(rows.len() <= TILE_ROWS && out.len() == rows.len());
    match kernel {
        Kernel::Scalar => {
            for (o, &a) in out.iter_mut().zip(rows) {
                *o = reference(ty, w_row, a);
            }
        }
        // SAFETY: `Kernel::of` and `Kernel::available` give these only when the CPU has
        // their instruction sets; every activation row holds `stride ≥ w_row`'s block count
        // rounded up to 8 blocks (`Act::new`), which is what the kernels read.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { super::avx2::dot_rows(ty, w_row, rows, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::AvxVnni => unsafe { super::avx2::dot_rows_vnni(ty, w_row, rows, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { super::avx512::dot_rows(ty, w_row, rows, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512Vnni => unsafe { super::avx512::dot_rows_vnni(ty, w_row, rows, out) },
    }
}
