//! The tokenizer of a GGUF file, built from its `tokenizer.ggml.*` metadata alone as a
//! `tokenizers` tokenizer that gives the ids llama.cpp's own tokenizer gives.
//!
//! The reference is llama.cpp's `src/llama-vocab.cpp` (as vendored by `llama-cpp-sys-2`
//! 0.1.161): `llama_vocab::impl::load` reads the metadata, `tokenize` splits the text at special
//! tokens, then runs the model's tokenizer on each piece of text between them.
//!
//! ```text
//!  GgufVocab (plain values the GGUF reader read)
//!     │ checked: lengths, duplicate tokens, ids in range (vocab.rs)
//!     │ token kinds: types + llama.cpp's by-text fixes (vocab.rs)
//!     ├─ "gpt2"  ─► byte-level BPE: regex splits named by `pre` (presets.rs), merges (bpe.rs)
//!     └─ "llama" ─► SentencePiece-style BPE: ▁ for spaces, merges ranked by score,
//!                   <0xNN> byte fallback (spm.rs)
//!     then special tokens as added tokens, BOS/EOS as a template (special.rs)
//!     ─► sieve_text::Tokenizer
//! ```
//!
//! The inverse, [`export::vocab_from_hf`], states a Hugging Face directory's `tokenizer.json`
//! as a [`GgufVocab`] whose tokenizer gives the same ids (export.rs, export_pre.rs), or says
//! what GGUF cannot state.
//!
//! What llama.cpp does and how it is kept here:
//! - **Special tokens.** Control, unknown and user-defined tokens (and tokens llama.cpp
//!   treats as control by their text: `<|im_end|>`, `</s>`, FIM tokens, …) are split out of
//!   the text before anything else, as llama.cpp's `tokenize(..., parse_special = true)` does;
//!   here they are `tokenizers` added tokens (control and unknown ones special, user-defined
//!   ones not), matched on the raw text.
//! - **BOS/EOS.** Added when the caller asks for special tokens and `add_bos_token` /
//!   `add_eos_token` (else llama.cpp's default for the model and pre-tokenizer) says so.
//! - **gpt2.** The text between special tokens is split by the preset's regexes one after the
//!   other, byte-level encoded, and merged by the merge list's ranks (a word that is a token is
//!   taken whole for presets with `ignore_merges`, as Llama 3's).
//! - **llama.** A space is prepended to every piece of text (with `add_space_prefix`, the
//!   default) and spaces become `▁`; then the adjacent pair whose concatenation is the token
//!   with the highest score is merged, again and again; characters no token covers become
//!   `<0xNN>` byte tokens. That is BPE whose merge ranks are the scores of the merged tokens.
//!
//! Known differences (rare on real text; `docs/gguf_tokenizer.md` has the list): characters
//! new in Unicode 16 are undefined in llama.cpp's tables and letters or symbols here; two
//! different tokens with the *same* score in a `llama` vocabulary are merged in id order here
//! where llama.cpp takes the leftmost pair; special tokens overlapping one another are matched
//! leftmost-longest here where llama.cpp matches the longest token first everywhere; the
//! per-model quirks llama.cpp keys on `general.name` (Phi-3's `rstrip`) are not applied.

mod bpe;
pub mod export;
mod export_pre;
mod presets;
mod special;
mod spm;
mod vocab;

use crate::{Error, Result, Tokenizer};
use std::path::PathBuf;

/// The tokenizer metadata of a GGUF file, as plain values: what the GGUF reader read from the
/// `tokenizer.ggml.*` keys. [`gguf_tokenizer`] builds the tokenizer from it.
///
/// Keys a file does not have are `None`; llama.cpp's defaults apply then.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GgufVocab {
    /// The GGUF file (errors name it).
    pub path: PathBuf,
    /// `tokenizer.ggml.model`: `"gpt2"` (byte-level BPE) or `"llama"` (SentencePiece-style).
    pub model: String,
    /// `tokenizer.ggml.pre`: the pre-tokenizer of a `gpt2` vocabulary (`"llama-bpe"`,
    /// `"qwen2"`, `"smollm"`, …; absent means llama.cpp's `"default"`).
    pub pre: Option<String>,
    /// `tokenizer.ggml.tokens`: every token's text, by id.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.scores`: a score per token (the merge priority of a `llama`
    /// vocabulary).
    pub scores: Option<Vec<f32>>,
    /// `tokenizer.ggml.token_type`: a type per token (1 normal, 2 unknown, 3 control,
    /// 4 user-defined, 5 unused, 6 byte).
    pub token_types: Option<Vec<i32>>,
    /// `tokenizer.ggml.merges`: `"left right"` per merge, highest priority first (`gpt2`).
    pub merges: Option<Vec<String>>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos_id: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos_id: Option<u32>,
    /// `tokenizer.ggml.eot_token_id` (end of turn).
    pub eot_id: Option<u32>,
    /// `tokenizer.ggml.eom_token_id` (end of message).
    pub eom_id: Option<u32>,
    /// `tokenizer.ggml.unknown_token_id`.
    pub unk_id: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`.
    pub pad_id: Option<u32>,
    /// `tokenizer.ggml.add_bos_token`.
    pub add_bos: Option<bool>,
    /// `tokenizer.ggml.add_eos_token`.
    pub add_eos: Option<bool>,
    /// `tokenizer.ggml.add_space_prefix` (`llama` vocabularies).
    pub add_space_prefix: Option<bool>,
}

impl GgufVocab {
    /// Key of [`GgufVocab::model`].
    pub const KEY_MODEL: &'static str = "tokenizer.ggml.model";
    /// Key of [`GgufVocab::pre`].
    pub const KEY_PRE: &'static str = "tokenizer.ggml.pre";
    /// Key of [`GgufVocab::tokens`].
    pub const KEY_TOKENS: &'static str = "tokenizer.ggml.tokens";
    /// Key of [`GgufVocab::scores`].
    pub const KEY_SCORES: &'static str = "tokenizer.ggml.scores";
    /// Key of [`GgufVocab::token_types`].
    pub const KEY_TOKEN_TYPE: &'static str = "tokenizer.ggml.token_type";
    /// Key of [`GgufVocab::merges`].
    pub const KEY_MERGES: &'static str = "tokenizer.ggml.merges";
    /// Key of [`GgufVocab::bos_id`].
    pub const KEY_BOS_ID: &'static str = "tokenizer.ggml.bos_token_id";
    /// Key of [`GgufVocab::eos_id`].
    pub const KEY_EOS_ID: &'static str = "tokenizer.ggml.eos_token_id";
    /// Key of [`GgufVocab::eot_id`].
    pub const KEY_EOT_ID: &'static str = "tokenizer.ggml.eot_token_id";
    /// Key of [`GgufVocab::eom_id`].
    pub const KEY_EOM_ID: &'static str = "tokenizer.ggml.eom_token_id";
    /// Key of [`GgufVocab::unk_id`].
    pub const KEY_UNK_ID: &'static str = "tokenizer.ggml.unknown_token_id";
    /// Key of [`GgufVocab::pad_id`].
    pub const KEY_PAD_ID: &'static str = "tokenizer.ggml.padding_token_id";
    /// Key of [`GgufVocab::add_bos`].
    pub const KEY_ADD_BOS: &'static str = "tokenizer.ggml.add_bos_token";
    /// Key of [`GgufVocab::add_eos`].
    pub const KEY_ADD_EOS: &'static str = "tokenizer.ggml.add_eos_token";
    /// Key of [`GgufVocab::add_space_prefix`].
    pub const KEY_ADD_SPACE_PREFIX: &'static str = "tokenizer.ggml.add_space_prefix";

    /// The tokens that end generation, as llama.cpp's `special_eog_ids` collects them: EOS,
    /// EOT and EOM, and every token whose text llama.cpp knows as an end of turn, text or
    /// generation (`<|im_end|>`, `<|eot_id|>`, `<end_of_turn>`, `<|endoftext|>`, …) or as a
    /// FIM pad/repo/file-separator token. Sorted, no duplicates; ids outside the vocabulary
    /// are left out.
    pub fn end_of_generation_ids(&self) -> Vec<u32> {
        vocab::end_of_generation_ids(self)
    }

    /// An error about `key` of this file.
    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> Error {
        Error::GgufTokenizer {
            path: self.path.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// [`GgufVocab::end_of_generation_ids`] of a vocabulary given by its `tokenizer.ggml.model`,
/// its tokens (borrowed: a GGUF file's metadata read in place, not copied) and its EOS, EOT and
/// EOM ids (`ids`, in that order).
pub fn end_of_generation_ids<'a>(
    model: &str,
    tokens: impl ExactSizeIterator<Item = &'a str>,
    ids: [Option<u32>; 3],
) -> Vec<u32> {
    vocab::eog_ids(model, tokens, ids)
}

/// Builds the tokenizer llama.cpp would use for this metadata.
///
/// # Errors
/// [`Error::GgufTokenizer`], naming the file and the key, when the metadata is inconsistent
/// (scores or types shorter than the tokens, a duplicate token, a merge naming a token that
/// is not in the vocabulary, an id past the vocabulary, BOS to be added but no BOS id) or
/// names a model or pre-tokenizer that is not built here.
pub fn gguf_tokenizer(meta: &GgufVocab) -> Result<Tokenizer> {
    let checked = vocab::Checked::new(meta)?;
    let inner = match meta.model.as_str() {
        "gpt2" => bpe::build(meta, &checked)?,
        "llama" => spm::build(meta, &checked)?,
        other => {
            return Err(meta.error(
                GgufVocab::KEY_MODEL,
                format!(
                    "tokenizer model {other:?} is not supported (supported: \"gpt2\", \"llama\")"
                ),
            ))
        }
    };
    Ok(Tokenizer::from_tokenizers(&meta.path, inner))
}
