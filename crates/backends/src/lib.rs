//! # sieve-backends
//!
//! Home of the Burn transformer that turns a prompt into logits (prefill once, then decode with
//! a KV cache) and of the loop that joins it to a sampler pipeline. The model issue fills this
//! crate; until then it only defines the seam the generation loop will use.
#![warn(missing_docs)]

/// Something that produces next-token logits for a token sequence: the model, or canned
/// logits in a test.
pub trait LogitsSource {
    /// The size of the logits vector.
    fn vocab_size(&self) -> usize;
    /// Feeds `tokens` (appended to what was fed before) and returns the logits for the token
    /// after the last one.
    ///
    /// # Errors
    /// Whatever the source cannot do, as text for the user.
    fn next_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>, String>;
}
