//! The grammars compiled last, kept for the next stage built with the same grammar over the
//! same vocabulary: a request with `n` choices (or a server's repeated `response_format`)
//! compiles its grammar once, and each stage starts from a copy of the compiled parser.
//!
//! At most [`CAPACITY`] grammars are kept, the least recently used dropped first. A key is
//! the grammar's kind and text with a keyed hash of the vocabulary (its tokens' bytes and EOS
//! ids), so a stage never gets a parser compiled for another vocabulary.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use llguidance::Matcher;
use sieve_plugin::Vocab;
use toktrie::TokEnv;

use crate::source::Source;

/// How many compiled grammars are kept.
pub const CAPACITY: usize = 4;

/// What a compiled grammar is found by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    vocab: u64,
    grammar: String,
}

impl Key {
    /// The key of `source` over `vocab`.
    pub fn new(source: &Source, vocab: &Vocab) -> Self {
        let mut h = hasher_keys().build_hasher();
        vocab.len().hash(&mut h);
        vocab.tokens().for_each(|token| token.hash(&mut h));
        vocab.eos().hash(&mut h);
        let grammar = match source {
            Source::JsonSchema(schema) => format!("json_schema\0{schema}"),
            Source::Regex(rx) => format!("regex\0{rx}"),
            Source::Lark(text) => format!("lark\0{text}"),
        };
        Key {
            vocab: h.finish(),
            grammar,
        }
    }
}

/// A compiled grammar: the vocabulary's environment and the parser in its initial state.
#[derive(Clone)]
pub struct Compiled {
    /// The vocabulary as llguidance sees it.
    pub env: TokEnv,
    /// The parser before any token.
    pub matcher: Matcher,
}

/// A copy of the grammar compiled under `key`, if it is kept (it becomes the most recent).
pub fn get(key: &Key) -> Option<Compiled> {
    let mut kept = entries().lock().ok()?;
    let at = kept.iter().position(|(k, _)| k == key)?;
    let entry = kept.remove(at);
    let copy = entry.1.clone();
    kept.push(entry);
    Some(copy)
}

/// Keeps `compiled` under `key`, dropping the least recently used past [`CAPACITY`].
pub fn put(key: Key, compiled: Compiled) {
    if let Ok(mut kept) = entries().lock() {
        kept.retain(|(k, _)| *k != key);
        if kept.len() >= CAPACITY {
            kept.remove(0);
        }
        kept.push((key, compiled));
    }
}

/// Least recently used first.
fn entries() -> &'static Mutex<Vec<(Key, Compiled)>> {
    static ENTRIES: OnceLock<Mutex<Vec<(Key, Compiled)>>> = OnceLock::new();
    ENTRIES.get_or_init(|| Mutex::new(Vec::new()))
}

/// The process's hash keys for vocabularies (random, so a vocabulary cannot be made to
/// collide with another on purpose).
fn hasher_keys() -> &'static RandomState {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new)
}
