//! A Hugging Face tokenizer (`tokenizer.json`, `tokenizer_config.json`) as GGUF tokenizer
//! metadata: the [`GgufVocab`] whose tokenizer ([`super::gguf_tokenizer`], llama.cpp's
//! `llama_vocab`) gives the ids `tokenizer.json` gives. It is the reader's inverse; the
//! backends crate writes its fields under their `tokenizer.ggml.*` keys.
//!
//! ```text
//!  tokenizer.json ── model: BPE ─┬─ no byte fallback ─► "gpt2", pre = the preset whose
//!                                │                      regexes the pre-tokenizer runs
//!                                │                      (export_pre.rs), merges as listed
//!                                └─ byte fallback ────► "llama", add_space_prefix,
//!                                                       scores from the merge ranks
//!  tokens by id (ids the model has past the tokenizer's: "[PAD<id>]", unused)
//!  token types: added special → control, added → user-defined, unk → unknown,
//!               <0xNN> of a byte-fallback vocabulary → byte, else normal
//!  post_processor (TemplateProcessing) ─► add_bos / add_eos and their tokens
//!  tokenizer_config.json ─► bos/eos/unk/pad tokens (else generation_config / config ids;
//!                           the pad id of config.json, as llama.cpp's converter reads it)
//! ```
//!
//! The post-processor's template is read in `export/template.rs`, the scores of a `llama`
//! vocabulary made in `export/scores.rs`.
//!
//! **Scores of a `llama` vocabulary.** llama.cpp merges the adjacent pair whose concatenation
//! is the token of highest score; Hugging Face merges the pair of lowest merge rank. The score
//! written for a token is minus the rank of the first merge that makes it, so the two agree
//! when (checked here, an error otherwise) every split of a token into two tokens (or single
//! characters, which llama.cpp starts from) is a merge of the list, and the merges that make
//! one token are consecutive in it — what `tokenizers` makes from a SentencePiece model.
//!
//! Refused, naming the field: a model other than BPE, dropout, word prefixes or suffixes,
//! merges with a space in a token, added tokens that strip spaces or match single words, a
//! post-processor other than a template of one token before and one after the text, token
//! ids past the model's vocabulary, and the text steps `export_pre.rs` refuses.

mod scores;
mod template;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value as Json;

use super::export_pre::{text_steps, TextSteps};
use super::vocab::TokenKind;
use super::GgufVocab;
use crate::{Error, Result, CONFIG_FILE, TOKENIZER_CONFIG_FILE, TOKENIZER_FILE};

/// The GGUF tokenizer of a Hugging Face directory, and what it cannot state exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct HfVocab {
    /// The metadata (its `path` is the directory's `tokenizer.json`).
    pub vocab: GgufVocab,
    /// Differences accepted, for the user to read (an NFC normalizer GGUF does not state, an
    /// end-of-sequence id GGUF cannot list); empty when the tokenizer is stated exactly.
    pub notes: Vec<String>,
}

/// What the model directory says beside its tokenizer files: the rows of the model's
/// embedding (the GGUF vocabulary has exactly this many tokens) and the BOS/EOS ids of
/// `generation_config.json` / `config.json` (used where `tokenizer_config.json` names none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelIds {
    /// The model's vocabulary size (`config.json`'s `vocab_size`).
    pub vocab_size: usize,
    /// The BOS id of the generation / model config.
    pub bos: Option<u32>,
    /// The end-of-sequence ids of the generation / model config (the first is EOS where
    /// `tokenizer_config.json` names none; every one must end generation in the GGUF file).
    pub eos: Vec<u32>,
}

/// Reads the tokenizer of the Hugging Face directory `dir` as GGUF tokenizer metadata.
///
/// # Errors
/// [`Error::HfToGguf`], naming the file and the field, for a tokenizer GGUF cannot state
/// (see the module docs); the files' own errors ([`Error::MissingFile`], [`Error::Json`]).
pub fn vocab_from_hf(dir: &Path, ids: &ModelIds) -> Result<HfVocab> {
    let path = dir.join(TOKENIZER_FILE);
    let tokenizer: Json = crate::json::read_json(&path)?;
    let config_path = dir.join(TOKENIZER_CONFIG_FILE);
    let config: Option<Json> = match crate::json::read_json(&config_path) {
        Ok(c) => Some(c),
        Err(Error::MissingFile { .. }) => None,
        Err(e) => return Err(e),
    };
    // `config.json`'s `pad_token_id` stands where `tokenizer_config.json` names no pad token,
    // as llama.cpp's converter reads it (an id that is not a whole number is ignored).
    let model_config: Option<Json> = match crate::json::read_json(&dir.join(CONFIG_FILE)) {
        Ok(c) => Some(c),
        Err(Error::MissingFile { .. }) => None,
        Err(e) => return Err(e),
    };
    let config_pad = model_config
        .as_ref()
        .and_then(|c| c.get("pad_token_id")?.as_u64())
        .and_then(|id| u32::try_from(id).ok());
    Builder {
        path: &path,
        json: &tokenizer,
        config: config.as_ref(),
        ids,
        config_pad,
    }
    .build()
}

/// The inputs, with the errors naming `tokenizer.json`.
struct Builder<'a> {
    path: &'a Path,
    json: &'a Json,
    config: Option<&'a Json>,
    ids: &'a ModelIds,
    /// `config.json`'s `pad_token_id`.
    config_pad: Option<u32>,
}

/// One `added_tokens` entry.
struct Added {
    id: u32,
    content: String,
    special: bool,
}

impl Builder<'_> {
    fn error(&self, field: &str, message: impl Into<String>) -> Error {
        Error::HfToGguf {
            path: self.path.to_path_buf(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn build(&self) -> Result<HfVocab> {
        let model = self
            .json
            .get("model")
            .ok_or_else(|| self.error("model", "absent"))?;
        let model_type = model.get("type").and_then(Json::as_str).unwrap_or("BPE");
        if model_type != "BPE" {
            return Err(self.error(
                "model.type",
                format!("{model_type:?}: only BPE vocabularies are written to GGUF"),
            ));
        }
        for field in ["dropout", "continuing_subword_prefix", "end_of_word_suffix"] {
            match model.get(field) {
                None | Some(Json::Null) => {}
                Some(Json::String(s)) if s.is_empty() => {}
                Some(v) => {
                    return Err(self.error(
                        &format!("model.{field}"),
                        format!("{v}: llama.cpp's BPE has no such setting"),
                    ))
                }
            }
        }
        let flag = |f: &str| model.get(f).and_then(Json::as_bool).unwrap_or(false);
        let (byte_fallback, ignore_merges) = (flag("byte_fallback"), flag("ignore_merges"));
        let mut notes = Vec::new();
        let steps = text_steps(self.json, byte_fallback, ignore_merges, &mut notes)
            .map_err(|(field, why)| self.error(&field, why))?;

        let added = self.added_tokens()?;
        let (tokens, kinds) = self.tokens(model, &added, byte_fallback)?;
        let ids: HashMap<&str, u32> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i as u32))
            .collect();
        let merges = self.merges(model, &ids)?;
        let unk_id = match model.get("unk_token") {
            Some(Json::String(t)) => Some(self.id_of(&ids, "model.unk_token", t)?),
            _ => None,
        };
        let mut types: Vec<i32> = kinds.iter().map(|&k| type_of(k)).collect();
        // A byte-level vocabulary never falls back to its unknown token (every byte is one):
        // llama.cpp's converter keeps its type, as here.
        if let Some(u) = unk_id.filter(|_| byte_fallback) {
            types[u as usize] = type_of(TokenKind::Unknown);
        }

        let (template_bos, template_eos) = self.template(&ids)?;
        let named = |field: &str| -> Result<Option<u32>> {
            match self.config.and_then(|c| token_content(c.get(field)?)) {
                Some(text) => Ok(Some(self.id_of(&ids, field, &text)?)),
                None => Ok(None),
            }
        };
        let config_bos = named("bos_token")?;
        if let (Some(t), Some(c)) = (template_bos, config_bos) {
            if t != c {
                return Err(self.error(
                    "post_processor",
                    format!(
                        "adds token {t} before the text, but tokenizer_config.json's bos_token \
                         is token {c}: GGUF has one BOS"
                    ),
                ));
            }
        }
        let bos_id = template_bos.or(config_bos).or(self.ids.bos);
        let eos_id = template_eos
            .or(named("eos_token")?)
            .or(self.ids.eos.first().copied());
        let n = tokens.len();
        let pad_id = named("pad_token")?.or(self.config_pad.filter(|&id| (id as usize) < n));
        let unk_id = unk_id.or(named("unk_token")?);
        for (what, id) in [("BOS", bos_id), ("EOS", eos_id)] {
            if let Some(id) = id.filter(|&id| id as usize >= n) {
                return Err(self.error(
                    "added_tokens",
                    format!("the {what} id {id} is past the vocabulary of {n} tokens"),
                ));
            }
        }

        let (model_name, pre, scores, add_space_prefix, merges) = match steps {
            TextSteps::ByteLevel { pre } => ("gpt2", Some(pre.to_string()), None, None, merges),
            TextSteps::SentencePiece { add_space_prefix } => {
                let scores = self.scores(&tokens, &types, &merges)?;
                (
                    "llama",
                    None,
                    Some(scores),
                    Some(add_space_prefix),
                    Vec::new(),
                )
            }
        };
        let mut vocab = GgufVocab {
            path: self.path.to_path_buf(),
            model: model_name.to_string(),
            pre,
            tokens,
            scores,
            token_types: Some(types),
            merges: (model_name == "gpt2").then(|| {
                merges
                    .iter()
                    .map(|(l, r)| format!("{l} {r}"))
                    .collect::<Vec<_>>()
            }),
            bos_id,
            eos_id,
            eot_id: None,
            eom_id: None,
            unk_id,
            pad_id,
            add_bos: Some(template_bos.is_some()),
            add_eos: Some(template_eos.is_some()),
            add_space_prefix,
        };
        self.end_of_generation(&mut vocab, &mut notes);
        Ok(HfVocab { vocab, notes })
    }

    /// `added_tokens`, refusing those llama.cpp would match differently.
    fn added_tokens(&self) -> Result<Vec<Added>> {
        let list = match self.json.get("added_tokens") {
            None | Some(Json::Null) => return Ok(Vec::new()),
            Some(Json::Array(list)) => list,
            Some(_) => return Err(self.error("added_tokens", "not a list")),
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, entry) in list.iter().enumerate() {
            let field = format!("added_tokens[{i}]");
            let id = entry
                .get("id")
                .and_then(Json::as_u64)
                .and_then(|id| u32::try_from(id).ok());
            let content = entry.get("content").and_then(Json::as_str);
            let (Some(id), Some(content)) = (id, content) else {
                return Err(self.error(&field, "an entry without an id or content"));
            };
            for flag in ["lstrip", "rstrip", "single_word"] {
                if entry.get(flag).and_then(Json::as_bool) == Some(true) {
                    return Err(self.error(
                        &field,
                        format!(
                            "{content:?} has {flag}: llama.cpp matches added tokens on the text \
                             alone"
                        ),
                    ));
                }
            }
            let special = entry.get("special").and_then(Json::as_bool) == Some(true);
            let normalized = entry.get("normalized").and_then(Json::as_bool) == Some(true);
            if normalized && !special && content.contains([' ', '\u{2581}']) {
                return Err(self.error(
                    &field,
                    format!(
                        "{content:?} is matched on normalized text and holds a space: \
                         llama.cpp matches it on the text as given"
                    ),
                ));
            }
            out.push(Added {
                id,
                content: content.to_string(),
                special,
            });
        }
        Ok(out)
    }

    /// Every token's text and kind by id, for the model's vocabulary size.
    fn tokens(
        &self,
        model: &Json,
        added: &[Added],
        byte_fallback: bool,
    ) -> Result<(Vec<String>, Vec<TokenKind>)> {
        let n = self.ids.vocab_size;
        let mut tokens: Vec<Option<String>> = vec![None; n];
        let mut kinds = vec![TokenKind::Normal; n];
        let Some(vocab) = model.get("vocab").and_then(Json::as_object) else {
            return Err(self.error("model.vocab", "absent or not an object"));
        };
        let past = |text: &str, id: u64| {
            self.error(
                "model.vocab",
                format!(
                    "token {text:?} has id {id}, past the model's vocabulary of {n} \
                     (config.json's vocab_size)"
                ),
            )
        };
        for (text, id) in vocab {
            let Some(id) = id.as_u64() else {
                return Err(self.error("model.vocab", format!("{text:?}: id not a number")));
            };
            let slot = tokens.get_mut(id as usize).ok_or_else(|| past(text, id))?;
            if let Some(other) = slot {
                return Err(self.error(
                    "model.vocab",
                    format!("tokens {other:?} and {text:?} share id {id}"),
                ));
            }
            *slot = Some(text.clone());
            if byte_fallback && is_byte_token(text) {
                kinds[id as usize] = TokenKind::Byte;
            }
        }
        for a in added {
            let slot = tokens
                .get_mut(a.id as usize)
                .ok_or_else(|| past(&a.content, a.id.into()))?;
            match slot {
                Some(text) if *text != a.content => {
                    return Err(self.error(
                        "added_tokens",
                        format!(
                            "{:?} has id {}, which is the vocabulary's {text:?}",
                            a.content, a.id
                        ),
                    ))
                }
                _ => *slot = Some(a.content.clone()),
            }
            kinds[a.id as usize] = match a.special {
                true => TokenKind::Control,
                false => TokenKind::UserDefined,
            };
        }
        let mut seen = HashSet::with_capacity(n);
        let mut out = Vec::with_capacity(n);
        for (i, slot) in tokens.into_iter().enumerate() {
            let text = slot.unwrap_or_else(|| {
                kinds[i] = TokenKind::Unused;
                format!("[PAD{i}]")
            });
            if text.is_empty() {
                return Err(self.error("model.vocab", format!("token {i} is empty")));
            }
            if !seen.insert(text.clone()) {
                return Err(self.error("added_tokens", format!("two ids have the text {text:?}")));
            }
            out.push(text);
        }
        Ok((out, kinds))
    }

    /// `model.merges` (`"left right"` strings or `[left, right]` pairs), both sides tokens.
    fn merges(&self, model: &Json, ids: &HashMap<&str, u32>) -> Result<Vec<(String, String)>> {
        let list = match model.get("merges") {
            None | Some(Json::Null) => return Ok(Vec::new()),
            Some(Json::Array(list)) => list,
            Some(_) => return Err(self.error("model.merges", "not a list")),
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, m) in list.iter().enumerate() {
            let pair = match m {
                Json::String(s) => s
                    .split_once(' ')
                    .map(|(l, r)| (l.to_string(), r.to_string())),
                Json::Array(p) => match p.as_slice() {
                    [Json::String(l), Json::String(r)] => Some((l.clone(), r.clone())),
                    _ => None,
                },
                _ => None,
            };
            let field = format!("model.merges[{i}]");
            let Some((l, r)) = pair else {
                return Err(self.error(&field, "not two tokens"));
            };
            if l.is_empty() || r.is_empty() || l.contains(' ') || r.contains(' ') {
                return Err(self.error(
                    &field,
                    format!("{l:?} {r:?}: GGUF separates the sides of a merge with a space"),
                ));
            }
            for part in [l.clone(), r.clone(), format!("{l}{r}")] {
                if !ids.contains_key(part.as_str()) {
                    return Err(self.error(&field, format!("{part:?} is not a token")));
                }
            }
            out.push((l, r));
        }
        Ok(out)
    }

    /// The id of the token `text`, for `field`.
    fn id_of(&self, ids: &HashMap<&str, u32>, field: &str, text: &str) -> Result<u32> {
        ids.get(text)
            .copied()
            .ok_or_else(|| self.error(field, format!("{text:?} is not a token")))
    }

    /// Sets EOT and EOM to the config's end-of-sequence ids that would not otherwise end
    /// generation in the GGUF file; notes those left over.
    fn end_of_generation(&self, vocab: &mut GgufVocab, notes: &mut Vec<String>) {
        for &id in &self.ids.eos {
            if (id as usize) >= vocab.tokens.len() || vocab.end_of_generation_ids().contains(&id) {
                continue;
            }
            if vocab.eot_id.is_none() {
                vocab.eot_id = Some(id);
            } else if vocab.eom_id.is_none() {
                vocab.eom_id = Some(id);
            } else {
                notes.push(format!(
                    "end-of-sequence id {id} ({:?}) does not end generation in GGUF (EOS, EOT \
                     and EOM are taken)",
                    vocab.tokens[id as usize]
                ));
            }
        }
    }
}

/// A special-token field of `tokenizer_config.json`: a string or an `AddedToken` object.
fn token_content(field: &Json) -> Option<String> {
    match field {
        Json::String(s) => Some(s.clone()),
        Json::Object(o) => Some(o.get("content")?.as_str()?.to_string()),
        _ => None,
    }
}

/// Whether `text` is a byte token `<0xNN>`.
fn is_byte_token(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 6
        && text.starts_with("<0x")
        && text.ends_with('>')
        && b[3..5].iter().all(u8::is_ascii_hexdigit)
}

/// `tokenizer.ggml.token_type` of a kind.
fn type_of(kind: TokenKind) -> i32 {
    match kind {
        TokenKind::Normal => 1,
        TokenKind::Unknown => 2,
        TokenKind::Control => 3,
        TokenKind::UserDefined => 4,
        TokenKind::Unused => 5,
        TokenKind::Byte => 6,
        TokenKind::Undefined => 0,
    }
}
