//! [`QuantType`]: the GGML block formats a quantized weight can be stored in, with their ids in
//! GGUF files, block geometry and names.

use std::fmt;
use std::str::FromStr;

use crate::Error;

/// A GGML block format: a weight row is cut into blocks of [`QuantType::block_len`] elements,
/// each stored in [`QuantType::block_bytes`] little-endian bytes (scales as IEEE `f16`), laid
/// out exactly as GGML stores them (`ggml-common.h`), so the bytes of a GGUF tensor are used in
/// place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuantType {
    /// 32 elements: `f16 d; u8 qs[16]`; `x = d · (q − 8)`, 4-bit `q` (18 bytes).
    Q4_0,
    /// 32 elements: `f16 d, m; u8 qs[16]`; `x = d · q + m`, 4-bit `q` (20 bytes).
    Q4_1,
    /// 32 elements: `f16 d; u8 qh[4]; u8 qs[16]`; `x = d · (q − 16)`, 5-bit `q` (22 bytes).
    Q5_0,
    /// 32 elements: `f16 d, m; u8 qh[4]; u8 qs[16]`; `x = d · q + m`, 5-bit `q` (24 bytes).
    Q5_1,
    /// 32 elements: `f16 d; i8 qs[32]`; `x = d · q` (34 bytes).
    Q8_0,
    /// 256 elements in 16 sub-blocks of 16 with 4-bit scales and mins, 2-bit `q` (84 bytes).
    Q2K,
    /// 256 elements in 16 sub-blocks of 16 with 6-bit scales, 3-bit `q` (110 bytes).
    Q3K,
    /// 256 elements in 8 sub-blocks of 32 with 6-bit scales and mins, 4-bit `q` (144 bytes).
    Q4K,
    /// 256 elements in 8 sub-blocks of 32 with 6-bit scales and mins, 5-bit `q` (176 bytes).
    Q5K,
    /// 256 elements in 16 sub-blocks of 16 with 8-bit scales, 6-bit `q` (210 bytes).
    Q6K,
}

impl QuantType {
    /// Every type, legacy blocks first.
    pub const ALL: [QuantType; 10] = [
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q5_0,
        QuantType::Q5_1,
        QuantType::Q8_0,
        QuantType::Q2K,
        QuantType::Q3K,
        QuantType::Q4K,
        QuantType::Q5K,
        QuantType::Q6K,
    ];

    /// The type with GGML id `id` (`ggml_type` in `ggml.h`, the tensor type field of a GGUF
    /// file); `None` for the float types (F32 0, F16 1, BF16 30) and any other id.
    pub fn from_ggml_type(id: u32) -> Option<QuantType> {
        QuantType::ALL.into_iter().find(|t| t.ggml_type() == id)
    }

    /// The GGML id of this type.
    pub const fn ggml_type(self) -> u32 {
        match self {
            QuantType::Q4_0 => 2,
            QuantType::Q4_1 => 3,
            QuantType::Q5_0 => 6,
            QuantType::Q5_1 => 7,
            QuantType::Q8_0 => 8,
            QuantType::Q2K => 10,
            QuantType::Q3K => 11,
            QuantType::Q4K => 12,
            QuantType::Q5K => 13,
            QuantType::Q6K => 14,
        }
    }

    /// Elements per block: 32 for the legacy types, 256 for the K-quants.
    pub const fn block_len(self) -> usize {
        if self.is_k() {
            256
        } else {
            32
        }
    }

    /// Bytes per block.
    pub const fn block_bytes(self) -> usize {
        match self {
            QuantType::Q4_0 => 18,
            QuantType::Q4_1 => 20,
            QuantType::Q5_0 => 22,
            QuantType::Q5_1 => 24,
            QuantType::Q8_0 => 34,
            QuantType::Q2K => 84,
            QuantType::Q3K => 110,
            QuantType::Q4K => 144,
            QuantType::Q5K => 176,
            QuantType::Q6K => 210,
        }
    }

    /// Whether a block of this type adds an offset to its dot product (`m_w · s_a`: Q4_1 and
    /// Q5_1, whose blocks store a minimum beside the scale).
    #[inline(always)]
    pub(crate) const fn has_offset(self) -> bool {
        matches!(self, QuantType::Q4_1 | QuantType::Q5_1)
    }

    /// Whether this is a K-quant (256-element super-blocks, Q8_K activations).
    pub const fn is_k(self) -> bool {
        matches!(
            self,
            QuantType::Q2K | QuantType::Q3K | QuantType::Q4K | QuantType::Q5K | QuantType::Q6K
        )
    }

    /// Bytes of a row of `k` elements, `None` unless `k` is a multiple of the block length
    /// (or on overflow, which a multiple cannot reach for a `k` that fits in memory).
    pub fn row_bytes(self, k: usize) -> Option<usize> {
        if !k.is_multiple_of(self.block_len()) {
            return None;
        }
        (k / self.block_len()).checked_mul(self.block_bytes())
    }

    /// The lower-case name GGML and llama.cpp use (`q4_0`, `q4_k`, …), also what
    /// [`FromStr`] reads.
    pub const fn name(self) -> &'static str {
        match self {
            QuantType::Q4_0 => "q4_0",
            QuantType::Q4_1 => "q4_1",
            QuantType::Q5_0 => "q5_0",
            QuantType::Q5_1 => "q5_1",
            QuantType::Q8_0 => "q8_0",
            QuantType::Q2K => "q2_k",
            QuantType::Q3K => "q3_k",
            QuantType::Q4K => "q4_k",
            QuantType::Q5K => "q5_k",
            QuantType::Q6K => "q6_k",
        }
    }
}

impl fmt::Display for QuantType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for QuantType {
    type Err = Error;

    /// A type by its name, in any case (`q4_k`, `Q4_K`).
    ///
    /// # Errors
    /// [`Error::UnknownQuantType`] naming the text and the known names.
    fn from_str(s: &str) -> Result<Self, Error> {
        QuantType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::UnknownQuantType { name: s.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_names_and_sizes_round_trip() {
        for t in QuantType::ALL {
            assert_eq!(QuantType::from_ggml_type(t.ggml_type()), Some(t));
            assert_eq!(t.name().parse::<QuantType>().unwrap(), t);
            assert_eq!(t.name().to_uppercase().parse::<QuantType>().unwrap(), t);
            assert_eq!(t.to_string(), t.name());
            // Bits per weight within GGML's published range (2.6 to 8.5).
            let bpw = 8.0 * t.block_bytes() as f64 / t.block_len() as f64;
            assert!((2.6..=8.5).contains(&bpw), "{t}: {bpw}");
        }
        for float in [0, 1, 30, 9, 15, 99] {
            assert_eq!(QuantType::from_ggml_type(float), None);
        }
        assert!("q4".parse::<QuantType>().is_err());
        assert_eq!(QuantType::Q4K.row_bytes(512), Some(288));
        assert_eq!(QuantType::Q4_0.row_bytes(48), None);
    }
}
