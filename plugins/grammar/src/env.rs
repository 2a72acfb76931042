//! llguidance's view of the vocabulary: a token trie built from each token's bytes and the
//! EOS ids of a [`Vocab`], and the parser factory over it.
//!
//! - **EOS tokens** get llguidance's special-token marker (byte `0xFF`, never part of UTF-8
//!   text) before their bytes, so the grammar never reads `</s>` as the text `</s>`; the
//!   mask allows them only where the grammar may end.
//! - **Other tokens are their text.** [`Vocab`] does not say which tokens are special, so a
//!   special token such as `<s>` counts as the characters `<s>` and is allowed where those
//!   characters are (the text that results is valid; it just came from an odd token).
//! - **Tokens that cannot be in a trie are never allowed**: empty tokens (ids the tokenizer
//!   does not know) and tokens longer than [`MAX_TOKEN_BYTES`] bytes.
//! - Tokenizing text (which llguidance needs only for forced continuations) is greedy, and
//!   declared non-canonical, so llguidance never forces tokens: it computes a mask on every
//!   step.

use std::sync::Arc;

use llguidance::ParserFactory;
use sieve_plugin::{Error, Vocab};
use toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie, INVALID_TOKEN};

/// Longest token (in bytes) the trie takes; llguidance's trie allows about 1000 levels.
pub const MAX_TOKEN_BYTES: usize = 1000;

/// Largest vocabulary llguidance's trie can index (24-bit token ids, one value reserved).
pub const MAX_VOCAB: usize = 0xff_ffff;

fn failed(message: String) -> Error {
    Error::Stage {
        stage: "grammar".into(),
        message,
    }
}

/// The token byte strings llguidance sees for `vocab`: EOS tokens marked special, tokens too
/// long for the trie emptied.
pub fn trie_words(vocab: &Vocab) -> Vec<Vec<u8>> {
    let eos = vocab.eos();
    vocab
        .tokens()
        .enumerate()
        .map(|(id, bytes)| {
            if eos.contains(&(id as u32)) {
                let mut marked = Vec::with_capacity(bytes.len() + 1);
                marked.push(TokTrie::SPECIAL_TOKEN_MARKER);
                marked.extend_from_slice(bytes);
                marked.truncate(MAX_TOKEN_BYTES);
                marked
            } else if bytes.len() > MAX_TOKEN_BYTES {
                Vec::new()
            } else {
                bytes.to_vec()
            }
        })
        .collect()
}

/// The tokenizer environment of `vocab`.
///
/// # Errors
/// [`Error::Stage`] for a vocabulary llguidance cannot index (empty, or more than
/// [`MAX_VOCAB`] tokens) or an EOS id outside it.
pub fn tok_env(vocab: &Vocab) -> Result<TokEnv, Error> {
    let n = vocab.len();
    if n == 0 || n > MAX_VOCAB {
        return Err(failed(format!(
            "the vocabulary has {n} tokens; llguidance handles 1 to {MAX_VOCAB}"
        )));
    }
    if let Some(&bad) = vocab.eos().iter().find(|&&id| id as usize >= n) {
        return Err(failed(format!(
            "EOS token {bad} is outside the vocabulary of {n} tokens"
        )));
    }
    let first_eos = vocab.eos().first().copied().unwrap_or(INVALID_TOKEN);
    let info = TokRxInfo::new(n as u32, first_eos);
    let mut trie = TokTrie::from(&info, &trie_words(vocab));
    if vocab.eos().len() > 1 {
        trie = trie.with_eos_tokens(vocab.eos());
    }
    Ok(Arc::new(ApproximateTokEnv::new(trie)))
}

/// A parser factory over `env`, silent (llguidance would print warnings to stderr).
///
/// # Errors
/// [`Error::Stage`] if llguidance refuses the vocabulary.
pub fn factory(env: &TokEnv) -> Result<ParserFactory, Error> {
    let mut factory = ParserFactory::new_simple(env)
        .map_err(|e| failed(format!("llguidance refused the vocabulary: {e}")))?;
    factory.quiet();
    Ok(factory)
}

/// A factory over the 256 single bytes (and an EOS), to check that a grammar compiles when no
/// vocabulary is loaded.
pub fn byte_factory() -> Result<ParserFactory, Error> {
    factory(&ApproximateTokEnv::single_byte_env())
}
