//! The element types a weight can be stored in, and their exact widening to `f32`.

use std::fmt;

/// How a weight's elements are stored: little-endian `f32`, `bf16` or IEEE `f16`.
///
/// Widening `bf16` and `f16` to `f32` is exact, so the dtype never changes a reduction's order
/// or rounding: a `bf16` weight gives the same bits as the `f32` weight holding the widened
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    /// IEEE binary32.
    F32,
    /// bfloat16: the top 16 bits of an `f32`.
    Bf16,
    /// IEEE binary16.
    F16,
}

impl Dtype {
    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 | Dtype::F16 => 2,
        }
    }

    /// The element at `index` of little-endian `bytes`, widened to `f32`.
    ///
    /// # Panics
    /// If `bytes` is too short.
    pub fn get(self, bytes: &[u8], index: usize) -> f32 {
        let at = index * self.size();
        match self {
            Dtype::F32 => {
                f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
            }
            Dtype::Bf16 => bf16_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]])),
            Dtype::F16 => f16_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]])),
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
        })
    }
}

/// The `f32` whose top half is `bits` (exact).
#[inline(always)]
pub(crate) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// The `f32` equal to the binary16 `bits` (exact).
#[inline(always)]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}
