//! `tokenizer.json` through the `tokenizers` crate: encoding prompts, decoding ids, and each
//! token's bytes for [`sieve_core::Vocab`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tokenizers::DecoderWrapper;

use sieve_engine::Detokenize;

use crate::{Error, Result};

/// How a token's string maps to the bytes it stands for, read from the tokenizer's decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ByteMapping {
    /// GPT-2 byte-level BPE (Llama 3, Qwen2, SmolLM): every byte is drawn as a printable
    /// character (`Ġ` for a space).
    ByteLevel,
    /// SentencePiece-style (Llama 2, TinyLlama, Mistral): `▁` is a space and, with byte
    /// fallback, `<0xNN>` is the byte `NN`.
    SentencePiece {
        /// Whether `<0xNN>` tokens stand for single bytes.
        byte_fallback: bool,
    },
    /// The token's string is its text.
    Plain,
}

/// A Hugging Face tokenizer with the file it came from.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    mapping: ByteMapping,
    /// Added tokens' contents by id.
    added: HashMap<u32, String>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab_size())
            .field("mapping", &self.mapping)
            .finish()
    }
}

impl Tokenizer {
    /// Loads a `tokenizer.json`.
    ///
    /// # Errors
    /// [`Error::MissingFile`], [`Error::NotRegularFile`], [`Error::Io`], or
    /// [`Error::Tokenizer`] when the tokenizers crate rejects the file.
    pub fn from_file(path: &Path) -> Result<Self> {
        let bytes = crate::files::read_regular(path)?;
        Self::from_bytes(path, &bytes)
    }

    /// Loads a tokenizer from the contents of a `tokenizer.json`; `path` only names it in
    /// errors.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] when the tokenizers crate rejects the text.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| Error::Tokenizer {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Self::from_tokenizers(path, inner))
    }

    /// Wraps a tokenizer built in code (from a GGUF file's metadata: see
    /// [`crate::gguf_tokenizer`]); `path` names its source in errors. How token strings map to
    /// bytes is read from its decoder, as for a `tokenizer.json`.
    pub fn from_tokenizers(path: &Path, inner: tokenizers::Tokenizer) -> Self {
        let mapping = inner.get_decoder().map_or(ByteMapping::Plain, mapping_of);
        let added = inner
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(id, t)| (id, t.content))
            .collect();
        Tokenizer {
            inner,
            path: path.to_path_buf(),
            mapping,
            added,
        }
    }

    /// The file this tokenizer came from (`tokenizer.json` when built from bytes by a
    /// caller that passed that name).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of tokens, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// Whether the tokenizer normalizes text before splitting it (Unicode composition,
    /// lowercasing, …), which can make the text it encodes shorter than the text given.
    pub fn normalizes(&self) -> bool {
        self.inner.get_normalizer().is_some()
    }

    /// Encodes `text`; with `add_special_tokens` the tokenizer's post-processor adds what the
    /// model expects around a sequence (typically BOS), as transformers does by default.
    ///
    /// # Errors
    /// [`Error::Tokenizer`].
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, add_special_tokens)
            .map_err(|e| self.error(e))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Decodes `ids` to text, special tokens included (so that a stop string may name one).
    /// Bytes that do not form complete UTF-8 characters decode as U+FFFD.
    ///
    /// # Errors
    /// [`Error::Tokenizer`].
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(|e| self.error(e))
    }

    /// The id of a token given by its string (`"</s>"`, `"<|im_end|>"`).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The bytes token `id` contributes to running text: the byte-level or `<0xNN>` byte
    /// fallback undone, `▁` as a space, an added token as its content.
    ///
    /// Unlike decoding the token alone, a leading space is kept (SentencePiece decoders strip
    /// the first space of a text), because stages that look at token bytes (DRY breakers,
    /// grammars) need what the token adds in the middle of a text.
    pub fn token_bytes(&self, id: u32) -> Option<Vec<u8>> {
        if let Some(content) = self.added.get(&id) {
            return Some(content.as_bytes().to_vec());
        }
        let token = self.inner.id_to_token(id)?;
        Some(match self.mapping {
            ByteMapping::ByteLevel => token.chars().flat_map(byte_level_char).collect(),
            ByteMapping::SentencePiece { byte_fallback } => {
                match byte_fallback.then(|| fallback_byte(&token)).flatten() {
                    Some(b) => vec![b],
                    None => token.replace('\u{2581}', " ").into_bytes(),
                }
            }
            ByteMapping::Plain => token.into_bytes(),
        })
    }

    /// The vocabulary for the sampler pipeline: `size` tokens (the model's vocabulary size,
    /// which may exceed the tokenizer's; ids it does not know get no bytes) and the EOS ids.
    pub fn vocab(&self, size: usize, eos: Vec<u32>) -> sieve_core::Vocab {
        let tokens = (0..size).map(|id| self.token_bytes(id as u32).unwrap_or_default());
        sieve_core::Vocab::from_tokens(tokens, eos)
    }

    fn error(&self, e: impl std::fmt::Display) -> Error {
        Error::Tokenizer {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }
}

impl Detokenize for Tokenizer {
    fn decode(&self, ids: &[u32]) -> sieve_engine::Result<String> {
        Tokenizer::decode(self, ids).map_err(|e| sieve_engine::Error::Detokenize(Box::new(e)))
    }

    fn decode_skipping_special(&self, ids: &[u32]) -> sieve_engine::Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| sieve_engine::Error::Detokenize(Box::new(self.error(e))))
    }
}

/// The byte mapping a decoder implies (looking inside a `Sequence`).
fn mapping_of(decoder: &DecoderWrapper) -> ByteMapping {
    fn visit(d: &DecoderWrapper, byte_level: &mut bool, sp: &mut bool, fallback: &mut bool) {
        match d {
            DecoderWrapper::ByteLevel(_) => *byte_level = true,
            DecoderWrapper::Metaspace(_) | DecoderWrapper::Replace(_) => *sp = true,
            DecoderWrapper::ByteFallback(_) => *fallback = true,
            DecoderWrapper::Sequence(seq) => {
                for inner in seq.get_decoders() {
                    visit(inner, byte_level, sp, fallback);
                }
            }
            _ => {}
        }
    }
    let (mut byte_level, mut sp, mut fallback) = (false, false, false);
    visit(decoder, &mut byte_level, &mut sp, &mut fallback);
    if byte_level {
        ByteMapping::ByteLevel
    } else if sp || fallback {
        ByteMapping::SentencePiece {
            byte_fallback: fallback,
        }
    } else {
        ByteMapping::Plain
    }
}

/// `<0xNN>` → `NN`.
fn fallback_byte(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The byte a GPT-2 byte-level character stands for; a character outside the table (which a
/// byte-level vocabulary should not contain) stands for its own UTF-8 bytes.
///
/// The table: bytes `!`..=`~`, `¡`..=`¬` and `®`..=`ÿ` are drawn as themselves; the other 68
/// bytes, in increasing order, as U+0100, U+0101, ….
fn byte_level_char(c: char) -> Vec<u8> {
    let printable = |b: u32| {
        (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    let code = c as u32;
    if code <= 0xFF && printable(code) {
        return vec![code as u8];
    }
    if (0x100..0x100 + 68).contains(&code) {
        let n = code - 0x100;
        if let Some(b) = (0u32..=0xFF).filter(|&b| !printable(b)).nth(n as usize) {
            return vec![b as u8];
        }
    }
    c.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_table_inverts_gpt2_mapping() {
        assert_eq!(byte_level_char('A'), b"A");
        assert_eq!(byte_level_char('\u{120}'), b" "); // Ġ
        assert_eq!(byte_level_char('\u{10A}'), b"\n"); // Ċ
        assert_eq!(byte_level_char('\u{100}'), [0u8]);
        assert_eq!(byte_level_char('\u{143}'), [0xADu8]); // the last unprintable byte
        assert_eq!(byte_level_char('é'), [0xE9u8]);
        // Every byte has exactly one character.
        let mut seen = [false; 256];
        for code in (0x21..=0xFFu32).chain(0x100..0x144) {
            if let Some(c) = char::from_u32(code) {
                let b = byte_level_char(c);
                if b.len() == 1 && (code >= 0x100 || code == u32::from(b[0])) {
                    seen[b[0] as usize] = true;
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn fallback_bytes_parse_only_exact_forms() {
        assert_eq!(fallback_byte("<0x0A>"), Some(10));
        assert_eq!(fallback_byte("<0xE2>"), Some(0xE2));
        assert_eq!(fallback_byte("<0x0A"), None);
        assert_eq!(fallback_byte("<0x123>"), None);
        assert_eq!(fallback_byte("hello"), None);
    }

    #[test]
    fn malformed_tokenizer_json_is_an_error() {
        let e = Tokenizer::from_bytes(Path::new("tokenizer.json"), b"{\"model\": 3}").unwrap_err();
        assert!(matches!(e, Error::Tokenizer { .. }), "{e:?}");
        let e = Tokenizer::from_file(Path::new("/nonexistent/tokenizer.json")).unwrap_err();
        assert!(matches!(e, Error::MissingFile { .. }), "{e:?}");
    }
}
