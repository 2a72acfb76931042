//! What a stage sees besides the candidates: the step [`Context`] while running, the
//! [`BuildContext`] while being built, and the [`Vocab`] both may carry.

use alloc::vec::Vec;

/// The vocabulary of the model in use: every token's bytes (as the tokenizer decodes it on its
/// own) and the end-of-sequence ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vocab {
    tokens: Vec<Vec<u8>>,
    eos: Vec<u32>,
    /// Every id, sorted by its bytes, then by id: [`Vocab::find`] searches it (an index of
    /// 4 bytes a token instead of a second copy of every token's bytes).
    by_bytes: Vec<u32>,
}

impl Vocab {
    /// A vocabulary where token `i` decodes to `tokens[i]`. When several tokens share bytes,
    /// [`Vocab::find`] returns the lowest id.
    pub fn new(tokens: Vec<Vec<u8>>, eos: Vec<u32>) -> Self {
        let mut by_bytes: Vec<u32> = (0..tokens.len() as u32).collect();
        // Stable: ids with the same bytes stay in id order.
        by_bytes.sort_by(|&a, &b| tokens[a as usize].cmp(&tokens[b as usize]));
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
        let first = self
            .by_bytes
            .partition_point(|&id| self.tokens[id as usize].as_slice() < bytes);
        let id = *self.by_bytes.get(first)?;
        (self.tokens[id as usize] == bytes).then_some(id)
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

#[cfg(test)]
mod tests {
    use super::Vocab;
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn find_gives_the_lowest_id_with_exactly_those_bytes() {
        let tokens: Vec<Vec<u8>> = vec![
            b"b".to_vec(),
            b"ab".to_vec(),
            b"a".to_vec(),
            b"ab".to_vec(),
            Vec::new(),
            b"a".to_vec(),
            b"abc".to_vec(),
        ];
        let vocab = Vocab::new(tokens.clone(), vec![0]);
        assert_eq!(vocab.find(b"ab"), Some(1));
        assert_eq!(vocab.find(b"a"), Some(2));
        assert_eq!(vocab.find(b""), Some(4));
        assert_eq!(vocab.find(b"abc"), Some(6));
        assert_eq!(vocab.find(b"b"), Some(0));
        assert_eq!(vocab.find(b"c"), None);
        assert_eq!(vocab.find(b"abcd"), None);
        assert_eq!(vocab.find(b"aa"), None);
        // Against a linear scan, for every token and a few that are not there.
        for bytes in tokens
            .iter()
            .map(Vec::as_slice)
            .chain([&b"zz"[..], b"\xff"])
        {
            let scan = tokens.iter().position(|t| t == bytes).map(|i| i as u32);
            assert_eq!(vocab.find(bytes), scan, "{bytes:?}");
        }
        assert_eq!(Vocab::new(Vec::new(), Vec::new()).find(b"a"), None);
    }
}
