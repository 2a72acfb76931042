//! A token's text as log-probability entries show it.

use sieve_text::Tokenizer;

/// The bytes token `id` adds to running text, and those bytes as text (an incomplete UTF-8
/// character shows as U+FFFD).
pub fn token_text(tokenizer: &Tokenizer, id: u32) -> (String, Vec<u8>) {
    let bytes = tokenizer.token_bytes(id).unwrap_or_default();
    (String::from_utf8_lossy(&bytes).into_owned(), bytes)
}
