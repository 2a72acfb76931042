//! Sequence breakers: a head token mapped to the tails (token sequences) that complete a
//! breaker after it, as llama.cpp preprocesses them.
//!
//! # From strings (needs the vocabulary)
//! For a breaker string `s` (its first 40 bytes; llama.cpp's cap) and every token `t` of the
//! vocabulary, on the token's bytes `w`:
//! - `w` contains `s`: `t` is a *single-token breaker* (empty tail);
//! - otherwise, for every position `p` where `w[p..]` is a proper prefix of `s`: `t` is a head
//!   whose tail is the tokenization of the rest of `s` (at most 20 tokens; llama.cpp's cap).
//!
//! llama.cpp tokenizes the rest with the model's tokenizer. A plugin receives the vocabulary's
//! bytes but no tokenizer, so here the rest is split greedily into the longest tokens that
//! match (ties: the lowest id); a rest that cannot be split that way adds no tail. For the
//! usual breakers (one character each) no tail is ever needed; for longer ones the greedy
//! split is the tokenizer's output whenever the tokenizer would also pick the longest match.
//!
//! # From token ids
//! A list `[h, t1, t2, …]` is head `h` with tail `[t1, t2, …]`; `[h]` is a single-token
//! breaker. This works without a vocabulary (llama.cpp's `llama_sampler_init_dry_testing`
//! takes breakers the same way).

use std::collections::{BTreeMap, HashSet};

use sieve_plugin::Vocab;

/// The longest breaker string used, in bytes (llama.cpp's `MAX_CHAR_LEN`).
pub const MAX_BREAKER_BYTES: usize = 40;
/// The longest tail kept, in tokens (llama.cpp's `MAX_SEQ_LEN`).
pub const MAX_TAIL_TOKENS: usize = 20;

/// The most breakers a `dry` stage takes (llama.cpp's default has 4; each string breaker
/// costs a pass over the vocabulary when the stage is built).
pub const MAX_BREAKERS: usize = 256;

/// Head token → distinct tails.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Breakers {
    tails: BTreeMap<u32, Vec<Vec<u32>>>,
    /// Every `(head, tail)` inserted, so that adding one is a hash lookup, not a scan of the
    /// head's tails.
    seen: HashSet<(u32, Vec<u32>)>,
}

impl Breakers {
    /// No breakers.
    pub fn new() -> Self {
        Breakers::default()
    }

    /// Breakers given as token-id lists (`[head, tail…]`); empty lists are skipped.
    pub fn from_token_lists(lists: &[Vec<u32>]) -> Self {
        let mut b = Breakers::new();
        for list in lists {
            b.add_ids(list);
        }
        b
    }

    /// Adds the breaker `[head, tail…]` (the tail cut to [`MAX_TAIL_TOKENS`]); an empty list
    /// adds nothing.
    pub fn add_ids(&mut self, list: &[u32]) {
        if let Some((&head, tail)) = list.split_first() {
            self.insert(head, tail.iter().copied().take(MAX_TAIL_TOKENS).collect());
        }
    }

    /// Adds the breaker string `text` (cut to [`MAX_BREAKER_BYTES`]) resolved through `vocab`.
    pub fn add_text(&mut self, text: &[u8], vocab: &Vocab) {
        let s = &text[..text.len().min(MAX_BREAKER_BYTES)];
        let Some(&first) = s.first() else {
            return;
        };
        let longest_token = vocab.tokens().map(<[u8]>::len).max().unwrap_or(0);
        for (id, w) in vocab.tokens().enumerate() {
            let id = id as u32;
            if contains(w, s) {
                self.insert(id, Vec::new());
                continue;
            }
            for p in (0..w.len()).filter(|&p| w[p] == first) {
                // `w[p..]` is shorter than `s` here (else `w` would contain `s`).
                if s.starts_with(&w[p..]) {
                    if let Some(tail) = greedy_tokens(&s[w.len() - p..], vocab, longest_token) {
                        self.insert(id, tail);
                    }
                }
            }
        }
    }

    fn insert(&mut self, head: u32, tail: Vec<u32>) {
        if self.seen.insert((head, tail.clone())) {
            self.tails.entry(head).or_default().push(tail);
        }
    }

    /// The tails of breakers starting with `head` (empty when none).
    pub fn tails(&self, head: u32) -> &[Vec<u32>] {
        self.tails.get(&head).map_or(&[], Vec::as_slice)
    }

    /// Whether `token` is a breaker on its own (it is never penalized).
    pub fn is_single_token(&self, token: u32) -> bool {
        self.tails(token).iter().any(Vec::is_empty)
    }
}

/// Whether `needle` (non-empty) occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `text` split into the longest matching tokens, at most [`MAX_TAIL_TOKENS`] of them; `None`
/// when some position starts no token.
fn greedy_tokens(text: &[u8], vocab: &Vocab, longest_token: usize) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() && out.len() < MAX_TAIL_TOKENS {
        let max = longest_token.min(text.len() - at);
        let (len, id) = (1..=max)
            .rev()
            .find_map(|len| vocab.find(&text[at..at + len]).map(|id| (len, id)))?;
        out.push(id);
        at += len;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(tokens: &[&str]) -> Vocab {
        Vocab::new(
            tokens.iter().map(|t| t.as_bytes().to_vec()).collect(),
            vec![],
        )
    }

    #[test]
    fn tokens_containing_the_breaker_are_single_token_breakers() {
        let v = vocab(&["a", "\n", "b\n", "\n\n", "c"]);
        let mut b = Breakers::new();
        b.add_text(b"\n", &v);
        let singles: Vec<u32> = (0..5).filter(|&t| b.is_single_token(t)).collect();
        assert_eq!(singles, [1, 2, 3]);
        assert!(b.tails(0).is_empty() && b.tails(4).is_empty());
    }

    #[test]
    fn tokens_ending_with_a_prefix_get_the_rest_as_tail() {
        // Breaker "### Q": "##" (id 1) ends with the prefix "##" at 0 and "#" at 1, so it heads
        // tails for "# Q" (= "#", " Q") and "## Q" (= "##", " Q"); "x#" (id 3) ends with "#";
        // "### Q!" (id 4) contains the whole breaker.
        let v = vocab(&["#", "##", " Q", "x#", "### Q!", "Q"]);
        let mut b = Breakers::new();
        b.add_text(b"### Q", &v);
        assert_eq!(b.tails(1), [vec![0, 2], vec![1, 2]]);
        assert_eq!(b.tails(0), [vec![1, 2]]);
        assert_eq!(b.tails(3), [vec![1, 2]]);
        assert!(b.is_single_token(4));
        assert!(b.tails(2).is_empty() && b.tails(5).is_empty());
    }

    #[test]
    fn a_rest_no_token_starts_adds_nothing() {
        let v = vocab(&["a", "ab"]);
        let mut b = Breakers::new();
        // "abz": "a" and "ab" end with a prefix, but no token starts "z".
        b.add_text(b"abz", &v);
        assert_eq!(b, Breakers::new());
    }

    #[test]
    fn long_breakers_and_tails_are_capped() {
        let v = vocab(&["x", "y"]);
        let mut b = Breakers::new();
        // 50 bytes of "x" then "y": cut to the first 40 bytes, all "x", so "y" plays no part.
        // Token "x" is a prefix; the other 39 bytes would be 39 tokens, capped to 20.
        let mut text = vec![b'x'; 50];
        text.push(b'y');
        b.add_text(&text, &v);
        assert_eq!(b.tails(0), [vec![0; MAX_TAIL_TOKENS]]);
        assert!(b.tails(1).is_empty());
    }

    #[test]
    fn token_lists() {
        let b = Breakers::from_token_lists(&[vec![13], vec![25, 26, 27], vec![], vec![13]]);
        assert!(b.is_single_token(13) && !b.is_single_token(25));
        assert_eq!(b.tails(13), [Vec::<u32>::new()]);
        assert_eq!(b.tails(25), [vec![26, 27]]);
    }
}
