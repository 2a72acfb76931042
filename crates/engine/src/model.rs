//! The two seams of the generation loop: where logits come from ([`LanguageModel`]: a Burn
//! transformer, or canned logits in a test) and how ids become text ([`Detokenize`]: a
//! tokenizer, or a byte table in a test).
//!
//! A [`LanguageModel`] holds one sequence (its KV cache). The multi-sequence engine will add
//! sequence handles and batched steps beside these methods; a single-sequence model stays
//! the case of one sequence, so code written against this trait keeps its names.

use crate::Result;

/// A causal language model holding one growing token sequence: feed tokens, get the logits
/// of the next one.
pub trait LanguageModel {
    /// The length of every logits vector (the model's vocabulary, which may exceed the
    /// tokenizer's).
    fn vocab_size(&self) -> usize;

    /// The most tokens a sequence may hold (`max_position_embeddings` for a transformer).
    fn context_len(&self) -> usize;

    /// How many tokens the sequence holds: the position of the next token fed.
    fn position(&self) -> usize;

    /// Empties the sequence: the next [`LanguageModel::forward`] starts at position 0.
    fn reset(&mut self);

    /// Forgets every token from position `len` on, so that the next
    /// [`LanguageModel::forward`] continues after the first `len` tokens — the rollback of
    /// speculative decoding after rejected draft tokens. A `len` at or beyond
    /// [`LanguageModel::position`] changes nothing.
    fn truncate(&mut self, len: usize);

    /// Says the sequence will hold about `positions` tokens in all (its prompt and the most
    /// tokens the caller will generate), so that a model can size its cache for them once
    /// instead of growing it past them. A hint: no result depends on it, and a sequence may
    /// still grow beyond it. The default ignores it.
    fn reserve(&mut self, positions: usize) {
        let _ = positions;
    }

    /// Appends `tokens` to the sequence (all of them in one pass: the prefill, or one decode
    /// step) and returns the logits (`vocab_size` values) of the token that follows the last
    /// of them.
    ///
    /// # Errors
    /// [`crate::Error::Model`] with the model's own error (an out-of-range id, a full
    /// context, a device failure); a model should then leave the sequence as it was.
    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>>;
}

/// Turns token ids into text.
pub trait Detokenize {
    /// The text of `ids` decoded together. Bytes that do not (yet) form a complete UTF-8
    /// character must come out as U+FFFD, as the Hugging Face tokenizers do.
    ///
    /// # Errors
    /// [`crate::Error::Detokenize`] when the ids cannot be decoded.
    fn decode(&self, ids: &[u32]) -> Result<String>;

    /// The text of `ids` decoded together with special tokens (BOS, EOS, chat markers: what a
    /// tokenizer marks special) left out, as transformers' `decode(skip_special_tokens=True)`
    /// does. The default leaves nothing out, for detokenizers that know no special tokens.
    ///
    /// # Errors
    /// [`crate::Error::Detokenize`] when the ids cannot be decoded.
    fn decode_skipping_special(&self, ids: &[u32]) -> Result<String> {
        self.decode(ids)
    }
}

/// A view of a detokenizer whose [`Detokenize::decode`] leaves special tokens out (see
/// [`Detokenize::decode_skipping_special`]): what generated text is written with unless the
/// user asks to see special tokens.
#[derive(Clone, Copy)]
pub struct SkipSpecial<'a>(pub &'a dyn Detokenize);

impl Detokenize for SkipSpecial<'_> {
    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.0.decode_skipping_special(ids)
    }

    fn decode_skipping_special(&self, ids: &[u32]) -> Result<String> {
        self.0.decode_skipping_special(ids)
    }
}
