//! What a stage sees besides the candidates: the step [`Context`] while running, the
//! [`BuildContext`] while being built, and the [`Vocab`] both may carry.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// The vocabulary of the model in use: every token's bytes (as the tokenizer decodes it on its
/// own) and the end-of-sequence ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vocab {
    tokens: Vec<Vec<u8>>,
    eos: Vec<u32>,
    by_bytes: BTreeMap<Vec<u8>, u32>,
}

impl Vocab {
    /// A vocabulary where token `i` decodes to `tokens[i]`. When several tokens share bytes,
    /// [`Vocab::find`] returns the lowest id.
    pub fn new(tokens: Vec<Vec<u8>>, eos: Vec<u32>) -> Self {
        let mut by_bytes = BTreeMap::new();
        for (id, bytes) in tokens.iter().enumerate() {
            by_bytes.entry(bytes.clone()).or_insert(id as u32);
        }
        Vocab {
            tokens,
            eos,
            by_bytes,
        }
    }
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }
    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
    /// The bytes of token `id`, if it exists.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize).map(Vec::as_slice)
    }
    /// All tokens' bytes, indexed by id.
    pub fn tokens(&self) -> &[Vec<u8>] {
        &self.tokens
    }
    /// The end-of-sequence ids.
    pub fn eos(&self) -> &[u32] {
        &self.eos
    }
    /// The lowest id whose bytes are exactly `bytes`.
    pub fn find(&self, bytes: &[u8]) -> Option<u32> {
        self.by_bytes.get(bytes).copied()
    }
}

/// What a stage may read while it runs on one step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// Every token so far: the prompt, then the generated tokens.
    pub history: &'a [u32],
    /// How many of `history`'s first tokens are the prompt.
    pub prompt_len: usize,
    /// The vocabulary, when a tokenizer is loaded.
    pub vocab: Option<&'a Vocab>,
    /// Index of this step among the generated tokens (0 for the first).
    pub step: usize,
}

impl<'a> Context<'a> {
    /// A context with this history, all of it counted as prompt.
    pub fn with_history(history: &'a [u32]) -> Self {
        Context {
            history,
            prompt_len: history.len(),
            vocab: None,
            step: 0,
        }
    }
    /// The generated part of the history.
    pub fn generated(&self) -> &'a [u32] {
        &self.history[self.prompt_len.min(self.history.len())..]
    }
}

/// What a stage constructor may read: the run's seed (used by stages whose `seed` is `-1`),
/// and the vocabulary when a tokenizer is loaded.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuildContext<'a> {
    /// The run's seed (`--seed`).
    pub seed: u64,
    /// The vocabulary, when known.
    pub vocab: Option<&'a Vocab>,
}
