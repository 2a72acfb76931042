//! GGUF files (llama.cpp's format) as models: what [`crate::ModelDir::open`] does with a
//! `.gguf` path, a directory holding one (or one split set), or a split's first shard.
//!
//! ```text
//! sieve_gguf::GgufModel ─► config::config_json ─► ConfigJson ─► family_of ─► TransformerConfig
//!   (header, metadata,     ({arch}.* keys as        (the same family files as a
//!    tensors, shards)       config.json fields)      Hugging Face directory)
//!                      └─► tensors::GgufTensors ─► Checkpoint (HF names, q/k rows un-permuted)
//!                      └─► tokenizer.* keys ─► sieve_text::gguf_tokenizer, ChatTemplate, EOS ids
//! ```
//!
//! - `names`: GGUF tensor names against Hugging Face's;
//! - [`config`]: the metadata as `config.json` ([`Arch`]);
//! - [`tensors`]: the tensors under Hugging Face names ([`GgufTensors`]);
//! - [`find`]: which file a path means;
//! - [`export`]: a Hugging Face checkpoint written as GGUF (float types).

pub mod config;
pub mod export;
pub mod find;
mod names;
pub mod tensors;

pub use config::Arch;
pub use tensors::GgufTensors;

use std::path::Path;

use sieve_gguf::{GgufModel, Metadata};
use sieve_text::{ChatTemplate, GgufVocab, Tokenizer};

use crate::model::TransformerConfig;
use crate::Result;

/// The tokenizer metadata of `meta` (the file `path`) as [`GgufVocab`].
///
/// # Errors
/// [`crate::Error::Gguf`] for a key of the wrong type; `tokenizer.ggml.model` and
/// `tokenizer.ggml.tokens` are required.
pub fn vocab(meta: &Metadata, path: &Path) -> Result<GgufVocab> {
    let required = |key: &str| crate::Error::Gguf(meta.error(key, "required, absent"));
    let strings = |key: &str| -> Result<Option<Vec<String>>> {
        Ok(meta
            .get_str_array(key)?
            .map(|v| v.into_iter().map(str::to_string).collect()))
    };
    Ok(GgufVocab {
        path: path.to_path_buf(),
        model: meta
            .get_str(GgufVocab::KEY_MODEL)?
            .ok_or_else(|| required(GgufVocab::KEY_MODEL))?
            .to_string(),
        pre: meta.get_str(GgufVocab::KEY_PRE)?.map(str::to_string),
        tokens: strings(GgufVocab::KEY_TOKENS)?.ok_or_else(|| required(GgufVocab::KEY_TOKENS))?,
        scores: meta.get_f32_array(GgufVocab::KEY_SCORES)?,
        token_types: meta.get_i32_array(GgufVocab::KEY_TOKEN_TYPE)?,
        merges: strings(GgufVocab::KEY_MERGES)?,
        bos_id: meta.get_u32(GgufVocab::KEY_BOS_ID)?,
        eos_id: meta.get_u32(GgufVocab::KEY_EOS_ID)?,
        eot_id: meta.get_u32(GgufVocab::KEY_EOT_ID)?,
        eom_id: meta.get_u32(GgufVocab::KEY_EOM_ID)?,
        unk_id: meta.get_u32(GgufVocab::KEY_UNK_ID)?,
        pad_id: meta.get_u32(GgufVocab::KEY_PAD_ID)?,
        add_bos: meta.get_bool(GgufVocab::KEY_ADD_BOS)?,
        add_eos: meta.get_bool(GgufVocab::KEY_ADD_EOS)?,
        add_space_prefix: meta.get_bool(GgufVocab::KEY_ADD_SPACE_PREFIX)?,
    })
}

/// The end-of-generation ids of a GGUF model: llama.cpp's set (EOS, EOT, EOM and the end
/// tokens it knows by text) when the file has a vocabulary, else `tokenizer.ggml.eos_token_id`.
///
/// # Errors
/// As [`vocab`], for keys of the wrong type.
pub fn eos_ids(model: &GgufModel) -> Result<Vec<u32>> {
    let meta = model.metadata();
    if meta.contains(GgufVocab::KEY_TOKENS) && meta.contains(GgufVocab::KEY_MODEL) {
        // The tokens as the metadata holds them (in the file), not a copy of the vocabulary.
        let tokens = meta
            .get_str_array(GgufVocab::KEY_TOKENS)?
            .unwrap_or_default();
        let model_name = meta.get_str(GgufVocab::KEY_MODEL)?.unwrap_or_default();
        let ids = [
            meta.get_u32(GgufVocab::KEY_EOS_ID)?,
            meta.get_u32(GgufVocab::KEY_EOT_ID)?,
            meta.get_u32(GgufVocab::KEY_EOM_ID)?,
        ];
        return Ok(sieve_text::gguf_vocab::end_of_generation_ids(
            model_name,
            tokens.into_iter(),
            ids,
        ));
    }
    Ok(meta.get_u32(GgufVocab::KEY_EOS_ID)?.into_iter().collect())
}

/// The tokenizer of a GGUF model, built from its metadata alone.
///
/// # Errors
/// As [`vocab`] and [`sieve_text::gguf_tokenizer`].
pub fn tokenizer(model: &GgufModel) -> Result<Tokenizer> {
    let vocab = vocab(model.metadata(), model.first().path())?;
    Ok(sieve_text::gguf_tokenizer(&vocab)?)
}

/// The key holding the chat template.
pub const CHAT_TEMPLATE_KEY: &str = "tokenizer.chat_template";

/// The chat template of `tokenizer.chat_template`, with the BOS and EOS tokens' texts as
/// `bos_token` and `eos_token`.
///
/// # Errors
/// [`crate::Error::Gguf`] when the key is absent or not a string.
pub fn chat_template(model: &GgufModel) -> Result<ChatTemplate> {
    let meta = model.metadata();
    let source = meta
        .get_str(CHAT_TEMPLATE_KEY)?
        .ok_or_else(|| meta.error(CHAT_TEMPLATE_KEY, "absent: the file has no chat template"))?;
    let tokens = meta
        .get_str_array(GgufVocab::KEY_TOKENS)?
        .unwrap_or_default();
    let mut special = Vec::new();
    for (field, key) in [
        ("bos_token", GgufVocab::KEY_BOS_ID),
        ("eos_token", GgufVocab::KEY_EOS_ID),
    ] {
        if let Some(text) = meta.get_u32(key)?.and_then(|id| tokens.get(id as usize)) {
            special.push((field.to_string(), text.to_string()));
        }
    }
    Ok(ChatTemplate::from_source(
        model.first().path(),
        source,
        special,
    ))
}

/// Adjusts a configuration the families built for what the converter stored: Gemma's norm
/// weights are stored as `w + 1`, so the loader must not add the 1 again.
pub fn adjust(config: &mut TransformerConfig, arch: Arch) {
    if !arch.norms_hold_unit_offset() {
        return;
    }
    config.norm.unit_offset = false;
    for layer in &mut config.layers {
        layer.norm.unit_offset = false;
        if let Some(n) = &mut layer.attention.qk_norm {
            n.unit_offset = false;
        }
    }
}
