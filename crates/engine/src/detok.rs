//! Incremental detokenization: the text each new token adds, emitted only once it is complete
//! UTF-8 (a character whose bytes span several tokens comes out with its last byte).
//!
//! The method of Hugging Face TGI and vLLM (`detokenize_incrementally`): decode a window of
//! tokens that starts a little before the unread ones, compare with the same window without
//! them, and emit the difference unless it ends in U+FFFD (an incomplete character). Starting
//! the window early keeps the spaces that SentencePiece decoders strip at the start of a text.

use crate::model::Detokenize;
use crate::Result;

/// How many tokens of context are decoded before the new ones, at most.
const PRIMING: usize = 6;

/// Where the emitted text ends in a token sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncrementalDecoder {
    /// Start of the window decoded for context.
    prefix_offset: usize,
    /// Tokens before this one have been emitted.
    read_offset: usize,
}

impl IncrementalDecoder {
    /// A decoder for a sequence that starts with `prompt`, whose text is not emitted. The
    /// window starts at the latest of the prompt's last tokens that decode without U+FFFD.
    ///
    /// # Errors
    /// When the detokenizer fails.
    pub fn new(detok: &(impl Detokenize + ?Sized), prompt: &[u32]) -> Result<Self> {
        let read_offset = prompt.len();
        let mut prefix_offset = read_offset;
        for start in read_offset.saturating_sub(PRIMING)..read_offset {
            if !detok.decode(&prompt[start..])?.contains('\u{FFFD}') {
                prefix_offset = start;
                break;
            }
        }
        Ok(IncrementalDecoder {
            prefix_offset,
            read_offset,
        })
    }

    /// The text that `ids` (the whole sequence, prompt included) adds since the last call,
    /// or `""` while the new tokens end inside a character.
    ///
    /// # Errors
    /// When the detokenizer fails.
    pub fn step(&mut self, detok: &(impl Detokenize + ?Sized), ids: &[u32]) -> Result<String> {
        self.advance(detok, ids, false)
    }

    /// The rest of the text of `ids`, even if it ends inside a character (as U+FFFD): what
    /// to emit when the sequence is over.
    ///
    /// # Errors
    /// When the detokenizer fails.
    pub fn flush(&mut self, detok: &(impl Detokenize + ?Sized), ids: &[u32]) -> Result<String> {
        self.advance(detok, ids, true)
    }

    fn advance(
        &mut self,
        detok: &(impl Detokenize + ?Sized),
        ids: &[u32],
        force: bool,
    ) -> Result<String> {
        if ids.len() <= self.read_offset {
            return Ok(String::new());
        }
        let prefix = detok.decode(&ids[self.prefix_offset..self.read_offset])?;
        let full = detok.decode(&ids[self.prefix_offset..])?;
        if full.len() <= prefix.len() || (!force && full.ends_with('\u{FFFD}')) {
            return Ok(String::new());
        }
        let mut cut = prefix.len();
        while !full.is_char_boundary(cut) {
            cut += 1;
        }
        self.prefix_offset = self.read_offset;
        self.read_offset = ids.len();
        Ok(full[cut..].to_string())
    }
}
