//! What a stage sees besides the candidates: the step [`Context`] while running, the
//! [`BuildContext`] while being built, and the [`Vocab`] both may carry.

use alloc::vec::Vec;

/// The vocabulary of the model in use: every token's bytes (as the tokenizer decodes it on its
/// own) and the end-of-sequence ids.
///
/// The bytes are stored one token after the other in one buffer, with where each token
/// starts: for a 151 936-token vocabulary about 2.2 MB (its 1 MB of bytes and 8 bytes of
/// offset a token), where a vector per token took about 8.5 MB (a 24-byte header and an
/// allocation of at least 32 bytes each).
#[derive(Debug, Clone, PartialEq)]
pub struct Vocab {
    /// Every token's bytes, by id, one after the other.
    bytes: Vec<u8>,
    /// Token `i`'s bytes are `bytes[offsets[i]..offsets[i + 1]]` (`len() + 1` entries).
    offsets: Vec<usize>,
    eos: Vec<u32>,
    /// Every id, sorted by its bytes, then by id: [`Vocab::find`] searches it (an index of
    /// 4 bytes a token instead of a second copy of every token's bytes).
    by_bytes: Vec<u32>,
}

impl Default for Vocab {
    fn default() -> Self {
        Vocab::from_tokens(core::iter::empty::<&[u8]>(), Vec::new())
    }
}

impl Vocab {
    /// A vocabulary where token `i` decodes to `tokens[i]`. When several tokens share bytes,
    /// [`Vocab::find`] returns the lowest id.
    pub fn new(tokens: Vec<Vec<u8>>, eos: Vec<u32>) -> Self {
        Vocab::from_tokens(tokens, eos)
    }

    /// [`Vocab::new`] from any sequence of byte strings, token `i` the `i`-th (without a
    /// vector per token in between).
    pub fn from_tokens<T: AsRef<[u8]>>(tokens: impl IntoIterator<Item = T>, eos: Vec<u32>) -> Self {
        let mut bytes = Vec::new();
        let mut offsets = alloc::vec![0];
        for token in tokens {
            bytes.extend_from_slice(token.as_ref());
            offsets.push(bytes.len());
        }
        bytes.shrink_to_fit();
        let mut vocab = Vocab {
            bytes,
            offsets,
            eos,
            by_bytes: Vec::new(),
        };
        let mut by_bytes: Vec<u32> = (0..vocab.len() as u32).collect();
        // Stable: ids with the same bytes stay in id order.
        by_bytes.sort_by(|&a, &b| vocab.token(a).cmp(vocab.token(b)));
        vocab.by_bytes = by_bytes;
        vocab
    }
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes of token `id`, if it exists.
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        let i = id as usize;
        let (start, end) = (*self.offsets.get(i)?, *self.offsets.get(i + 1)?);
        Some(&self.bytes[start..end])
    }
    /// All tokens' bytes, in id order.
    pub fn tokens(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone + '_ {
        self.offsets.windows(2).map(|w| &self.bytes[w[0]..w[1]])
    }
    /// The end-of-sequence ids.
    pub fn eos(&self) -> &[u32] {
        &self.eos
    }
    /// The lowest id whose bytes are exactly `bytes`.
    pub fn find(&self, bytes: &[u8]) -> Option<u32> {
        let first = self.by_bytes.partition_point(|&id| self.token(id) < bytes);
        let id = *self.by_bytes.get(first)?;
        (self.token(id) == bytes).then_some(id)
    }
    /// Token `id`'s bytes (`id` below [`Vocab::len`]).
    fn token(&self, id: u32) -> &[u8] {
        let i = id as usize;
        &self.bytes[self.offsets[i]..self.offsets[i + 1]]
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

    #[test]
    fn the_tokens_come_back_in_id_order() {
        let tokens: Vec<Vec<u8>> = vec![
            b"ab".to_vec(),
            Vec::new(),
            b"\xff\x00".to_vec(),
            b"c".to_vec(),
        ];
        let vocab = Vocab::new(tokens.clone(), vec![3]);
        assert_eq!(vocab.len(), 4);
        assert_eq!(vocab.tokens().len(), 4);
        assert!(vocab.tokens().eq(tokens.iter().map(Vec::as_slice)));
        for (id, token) in tokens.iter().enumerate() {
            assert_eq!(vocab.token_bytes(id as u32), Some(token.as_slice()));
        }
        assert_eq!(vocab.token_bytes(4), None);
        assert_eq!(vocab.token_bytes(u32::MAX), None);
        assert_eq!(Vocab::from_tokens(tokens.iter(), vec![3]), vocab);
        let empty = Vocab::default();
        assert!(
            empty.is_empty() && empty.tokens().next().is_none() && empty.token_bytes(0).is_none()
        );
    }
}
