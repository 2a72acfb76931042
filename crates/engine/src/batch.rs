//! The multi-sequence seam: a [`BatchModel`] holds any number of sequences, each with its own
//! KV cache and position, and runs one step over any mix of them — some prefilling a prompt
//! chunk, some decoding one token, a verifier feeding several draft tokens — with all their
//! new tokens going through the linear layers as one matrix product.
//!
//! Sequences are named by [`SeqId`] handles: [`BatchModel::open`] makes an empty one,
//! [`BatchModel::fork`] copies one (beam search, parallel samples sharing a prompt, without
//! re-running the prompt), [`BatchModel::truncate`] rolls one back (speculative decoding),
//! [`BatchModel::close`] frees it.
//!
//! **Batch invariance** is part of the contract: the logits of a sequence depend only on its
//! own tokens, never on which other sequences share the step, nor on how many rows the step
//! has. Feeding `n` tokens in one step must also give, at each of them, the logits that `n`
//! one-token steps give (speculative verification relies on it for greedy identity).
//!
//! [`Sequence`] views one sequence of a [`BatchModel`] as a single-sequence
//! [`LanguageModel`], so [`generate()`](fn@crate::generate) runs on it unchanged.

use crate::model::LanguageModel;
use crate::{Error, Result};

/// The handle of one sequence held by a [`BatchModel`]. Handles of closed sequences may be
/// reused by later [`BatchModel::open`] and [`BatchModel::fork`] calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqId(pub u32);

impl std::fmt::Display for SeqId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sequence {}", self.0)
    }
}

/// Which positions of a [`Feed`] get logits back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitsAt {
    /// Only the last token fed (prefill and plain decoding).
    Last,
    /// Every token fed: row `i` predicts the token after `tokens[i]` (speculative
    /// verification of draft tokens).
    All,
}

/// The tokens one sequence gets in a [`BatchModel::step`].
#[derive(Debug, Clone, Copy)]
pub struct Feed<'a> {
    /// The sequence they are appended to.
    pub seq: SeqId,
    /// The new tokens (at least one).
    pub tokens: &'a [u32],
    /// Which positions return logits.
    pub logits: LogitsAt,
}

impl<'a> Feed<'a> {
    /// Feeds `tokens` to `seq`, returning the logits of the last one.
    pub fn last(seq: SeqId, tokens: &'a [u32]) -> Self {
        Feed {
            seq,
            tokens,
            logits: LogitsAt::Last,
        }
    }

    /// Feeds `tokens` to `seq`, returning the logits at every one of them.
    pub fn all(seq: SeqId, tokens: &'a [u32]) -> Self {
        Feed {
            seq,
            tokens,
            logits: LogitsAt::All,
        }
    }

    /// How many logits rows this feed returns.
    pub fn rows(&self) -> usize {
        match self.logits {
            LogitsAt::Last => 1,
            LogitsAt::All => self.tokens.len(),
        }
    }
}

/// A causal language model holding many sequences at once (see the [module](self) docs).
pub trait BatchModel {
    /// The length of every logits row.
    fn vocab_size(&self) -> usize;

    /// The most tokens one sequence may hold.
    fn context_len(&self) -> usize;

    /// A new, empty sequence.
    fn open(&mut self) -> SeqId;

    /// A new sequence holding a copy of `seq`'s tokens (its cache is copied, not
    /// recomputed); the two then grow independently.
    ///
    /// # Errors
    /// [`Error::UnknownSequence`].
    fn fork(&mut self, seq: SeqId) -> Result<SeqId>;

    /// Frees `seq` (an unknown handle is ignored).
    fn close(&mut self, seq: SeqId);

    /// How many tokens `seq` holds.
    ///
    /// # Errors
    /// [`Error::UnknownSequence`].
    fn position(&self, seq: SeqId) -> Result<usize>;

    /// Forgets every token of `seq` from position `len` on (a `len` at or past its position
    /// changes nothing).
    ///
    /// # Errors
    /// [`Error::UnknownSequence`].
    fn truncate(&mut self, seq: SeqId, len: usize) -> Result<()>;

    /// Says `seq` will hold about `positions` tokens in all (see
    /// [`LanguageModel::reserve`]); an unknown handle is ignored. The default ignores it.
    fn reserve(&mut self, seq: SeqId, positions: usize) {
        let _ = (seq, positions);
    }

    /// Appends each feed's tokens to its sequence, all in one forward pass, and returns per
    /// feed, in order, its logits rows concatenated ([`Feed::rows`] × `vocab_size` values).
    /// A sequence appears at most once per step.
    ///
    /// # Errors
    /// [`Error::UnknownSequence`], [`Error::EmptyPrompt`] for a feed without tokens,
    /// [`Error::DuplicateSequence`], and the model's own errors ([`Error::Model`]: an
    /// out-of-range id, a full context, a device failure). On error no sequence changes.
    fn step(&mut self, feeds: &[Feed<'_>]) -> Result<Vec<Vec<f32>>>;
}

/// One sequence of a [`BatchModel`] seen as a [`LanguageModel`]: [`LanguageModel::reset`]
/// truncates it to nothing, [`LanguageModel::forward`] is a one-feed step.
pub struct Sequence<'m, M: BatchModel + ?Sized> {
    model: &'m mut M,
    seq: SeqId,
}

impl<'m, M: BatchModel + ?Sized> Sequence<'m, M> {
    /// Views `seq` of `model`.
    ///
    /// # Errors
    /// [`Error::UnknownSequence`].
    pub fn new(model: &'m mut M, seq: SeqId) -> Result<Self> {
        model.position(seq)?;
        Ok(Sequence { model, seq })
    }

    /// The handle viewed.
    pub fn id(&self) -> SeqId {
        self.seq
    }
}

impl<M: BatchModel + ?Sized> LanguageModel for Sequence<'_, M> {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn context_len(&self) -> usize {
        self.model.context_len()
    }

    fn position(&self) -> usize {
        // `new` checked the handle and nothing here closes it.
        self.model.position(self.seq).unwrap_or(0)
    }

    fn reset(&mut self) {
        let _ = self.model.truncate(self.seq, 0);
    }

    fn truncate(&mut self, len: usize) {
        let _ = self.model.truncate(self.seq, len);
    }

    fn reserve(&mut self, positions: usize) {
        self.model.reserve(self.seq, positions);
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut out = self.model.step(&[Feed::last(self.seq, tokens)])?;
        out.pop().ok_or(Error::LogitsLength {
            expected: self.model.vocab_size(),
            found: 0,
        })
    }
}
