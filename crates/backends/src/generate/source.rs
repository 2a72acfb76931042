//! The two seams of the generation loop: where logits come from ([`LogitsSource`]: the model,
//! or canned logits in a test) and how ids become text ([`Detokenize`]: the tokenizer, or a
//! byte table in a test).

use crate::Result;

/// Something that produces next-token logits for a growing token sequence.
pub trait LogitsSource {
    /// The length of every logits vector.
    fn vocab_size(&self) -> usize;

    /// The most tokens a sequence may hold (`max_position_embeddings` for a model).
    fn context_len(&self) -> usize;

    /// How many tokens the current sequence holds.
    fn position(&self) -> usize;

    /// Starts a new, empty sequence.
    fn reset(&mut self);

    /// Appends `tokens` to the sequence and returns the logits (`vocab_size` values) of the
    /// token that follows the last of them.
    ///
    /// # Errors
    /// Whatever the source cannot do (an out-of-range id, a full context, a device failure).
    fn next_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>>;
}

/// Turns token ids into text.
pub trait Detokenize {
    /// The text of `ids` decoded together. Bytes that do not (yet) form a complete UTF-8
    /// character must come out as U+FFFD, as the Hugging Face tokenizers do.
    ///
    /// # Errors
    /// When the ids cannot be decoded.
    fn decode(&self, ids: &[u32]) -> Result<String>;
}
