//! The vocabulary across the boundary: a [`Vocab`] as an [`AbiVocab`] (concatenated token
//! bytes with offsets, and the EOS ids) and back.

use alloc::vec::Vec;

use crate::abi::AbiVocab;
use crate::AbiError;
use sieve_core::Vocab;

/// A vocabulary laid out for `create`; [`EncodedVocab::abi`] points into it.
#[derive(Debug, Clone)]
pub struct EncodedVocab {
    bytes: Vec<u8>,
    offsets: Vec<usize>,
    eos: Vec<u32>,
}

impl EncodedVocab {
    /// Lays out `vocab`: one pass over its tokens.
    pub fn new(vocab: &Vocab) -> Self {
        let total = vocab.tokens().map(<[u8]>::len).sum();
        let mut bytes = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(vocab.len() + 1);
        offsets.push(0);
        for token in vocab.tokens() {
            bytes.extend_from_slice(token);
            offsets.push(bytes.len());
        }
        EncodedVocab {
            bytes,
            offsets,
            eos: vocab.eos().to_vec(),
        }
    }

    /// The descriptor. It points into `self`'s heap buffers: valid while `self` is alive
    /// (moving `self` is fine).
    pub fn abi(&self) -> AbiVocab {
        AbiVocab {
            struct_size: core::mem::size_of::<AbiVocab>(),
            n_tokens: self.offsets.len() - 1,
            token_bytes: self.bytes.as_ptr(),
            token_offsets: self.offsets.as_ptr(),
            eos: self.eos.as_ptr(),
            n_eos: self.eos.len(),
        }
    }
}

/// Rebuilds the [`Vocab`] a host passed.
///
/// # Errors
/// A message when `struct_size` is too small, a pointer is null where data is needed, or the
/// offsets are not non-decreasing from 0.
///
/// # Safety
/// `v`'s pointers must point at as many readable elements as its counts say
/// (`n_tokens + 1` offsets, `token_offsets[n_tokens]` bytes, `n_eos` ids), valid for the call.
pub unsafe fn decode_vocab(v: &AbiVocab) -> Result<Vocab, AbiError> {
    if v.struct_size < core::mem::size_of::<AbiVocab>() {
        return Err(AbiError::VocabTooSmall {
            found: v.struct_size,
            expected: core::mem::size_of::<AbiVocab>(),
        });
    }
    if v.token_offsets.is_null() || (v.n_eos > 0 && v.eos.is_null()) {
        return Err(AbiError::VocabNullArray);
    }
    let n_offsets = v
        .n_tokens
        .checked_add(1)
        .ok_or(AbiError::Overflow("the vocabulary size"))?;
    // SAFETY: `n_tokens + 1` offsets (caller's promise), non-null (checked).
    let offsets = unsafe { core::slice::from_raw_parts(v.token_offsets, n_offsets) };
    if offsets[0] != 0 || offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err(AbiError::VocabOffsets);
    }
    let total = offsets[v.n_tokens];
    if total > 0 && v.token_bytes.is_null() {
        return Err(AbiError::VocabNullArray);
    }
    let bytes: &[u8] = if total == 0 {
        &[]
    } else {
        // SAFETY: `offsets[n_tokens]` bytes (caller's promise), non-null (checked).
        unsafe { core::slice::from_raw_parts(v.token_bytes, total) }
    };
    let eos: &[u32] = if v.n_eos == 0 {
        &[]
    } else {
        // SAFETY: `n_eos` ids (caller's promise), non-null (checked).
        unsafe { core::slice::from_raw_parts(v.eos, v.n_eos) }
    };
    let tokens = offsets
        .windows(2)
        .map(|w| bytes[w[0]..w[1]].to_vec())
        .collect();
    Ok(Vocab::new(tokens, eos.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn vocabularies_round_trip() {
        for vocab in [
            Vocab::new(
                vec![b"a".to_vec(), vec![], b"\n\0".to_vec(), b"bc".to_vec()],
                vec![3, 0],
            ),
            Vocab::new(vec![], vec![]),
        ] {
            let encoded = EncodedVocab::new(&vocab);
            let abi = encoded.abi();
            // SAFETY: `abi` points into `encoded`, alive.
            assert_eq!(unsafe { decode_vocab(&abi) }, Ok(vocab));
        }
    }

    #[test]
    fn malformed_descriptors_are_errors() {
        let vocab = Vocab::new(vec![b"ab".to_vec(), b"c".to_vec()], vec![]);
        let encoded = EncodedVocab::new(&vocab);
        let mut abi = encoded.abi();
        abi.struct_size = 8;
        // SAFETY: rejected before any pointer is read.
        assert!(unsafe { decode_vocab(&abi) }
            .unwrap_err()
            .to_string()
            .contains("at least"));
        let offsets = [0usize, 2, 1];
        let mut abi = encoded.abi();
        abi.token_offsets = offsets.as_ptr();
        // SAFETY: 3 offsets for 2 tokens; rejected before the bytes are read.
        assert!(unsafe { decode_vocab(&abi) }
            .unwrap_err()
            .to_string()
            .contains("non-decreasing"));
    }
}
