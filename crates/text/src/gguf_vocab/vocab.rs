//! The metadata checked and resolved as llama.cpp's `llama_vocab::impl::load` resolves it:
//! token texts, kinds, special ids and the BOS/EOS flags with their defaults.

use std::borrow::Cow;
use std::collections::HashMap;

use super::presets::Preset;
use super::GgufVocab;
use crate::Result;

/// What a token is, from `tokenizer.ggml.token_type` (llama.cpp's token attributes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// Type 1 (also every token of a file without types): ordinary text.
    Normal,
    /// Type 2: the unknown token; split out of the text like a control token.
    Unknown,
    /// Type 3: a control token (`<s>`, `<|im_end|>`); split out of the text before
    /// tokenizing, left out when decoding skips special tokens.
    Control,
    /// Type 4: a user-defined token; split out of the text, kept when decoding skips
    /// special tokens.
    UserDefined,
    /// Type 5: an unused slot.
    Unused,
    /// Type 6: a byte token `<0xNN>`.
    Byte,
    /// Any other type value (llama.cpp's "undefined").
    Undefined,
}

impl TokenKind {
    fn from_type(t: i32) -> TokenKind {
        match t {
            1 => TokenKind::Normal,
            2 => TokenKind::Unknown,
            3 => TokenKind::Control,
            4 => TokenKind::UserDefined,
            5 => TokenKind::Unused,
            6 => TokenKind::Byte,
            _ => TokenKind::Undefined,
        }
    }

    /// Whether llama.cpp splits the token out of the text before tokenizing it.
    pub(crate) fn is_split_out(self) -> bool {
        matches!(
            self,
            TokenKind::Control | TokenKind::Unknown | TokenKind::UserDefined
        )
    }
}

/// Texts llama.cpp treats as control tokens whatever their type (`load`'s EOT, EOM, FIM and
/// end-of-generation detection).
const CONTROL_BY_TEXT: &[&str] = &[
    // end of turn / text / generation
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
    // fill-in-the-middle
    "<|fim_prefix|>",
    "<fim-prefix>",
    "<fim_prefix>",
    "<｜fim▁begin｜>",
    "<PRE>",
    "▁<PRE>",
    "<|code_prefix|>",
    "<|prefix|>",
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<｜fim▁hole｜>",
    "<SUF>",
    "▁<SUF>",
    "<|code_suffix|>",
    "<|suffix|>",
    "<|fim_middle|>",
    "<fim-middle>",
    "<fim_middle>",
    "<｜fim▁end｜>",
    "<MID>",
    "▁<MID>",
    "<|code_middle|>",
    "<|middle|>",
    "<|fim_pad|>",
    "<fim-pad>",
    "<fim_pad>",
    "<PAD>",
    "[PAD]",
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<REPO>",
    "<reponame>",
    "<|file_sep|>",
];

/// Texts of end-of-generation tokens (llama.cpp's `special_eog_ids` by text, FIM pad, repo
/// and file separator included).
const EOG_BY_TEXT: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
    "<|fim_pad|>",
    "<fim-pad>",
    "<fim_pad>",
    "<PAD>",
    "[PAD]",
    "<|fim_repo|>",
    "<|repo_name|>",
    "<fim-repo>",
    "<REPO>",
    "<reponame>",
    "<|file_sep|>",
];

/// Texts llama.cpp always treats as user-defined (rendered) tokens (gpt-oss).
const USER_DEFINED_BY_TEXT: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/// The metadata, checked against itself and resolved. Token texts borrow the metadata's (a
/// 151 936-token vocabulary would otherwise be copied twice while the tokenizer is built).
#[derive(Debug)]
pub(crate) struct Checked<'a> {
    /// Token texts by id (an empty one named `[EMPTY_<id>]`, as llama.cpp names it).
    pub texts: Vec<Cow<'a, str>>,
    /// Token kinds by id.
    pub kinds: Vec<TokenKind>,
    /// Token scores by id (0 without scores).
    pub scores: Vec<f32>,
    /// Id of each text.
    pub ids: HashMap<Cow<'a, str>, u32>,
    /// The pre-tokenizer (`gpt2` vocabularies only).
    pub preset: Option<Preset>,
    /// BOS id, when there is one.
    pub bos: Option<u32>,
    /// EOS id, when there is one.
    pub eos: Option<u32>,
    /// The unknown token's id, when there is one.
    pub unk: Option<u32>,
    /// Whether encoding with special tokens adds BOS.
    pub add_bos: bool,
    /// Whether encoding with special tokens adds EOS.
    pub add_eos: bool,
}

impl<'a> Checked<'a> {
    /// Checks `meta` and resolves llama.cpp's defaults.
    pub(crate) fn new(meta: &'a GgufVocab) -> Result<Checked<'a>> {
        let n = meta.tokens.len();
        if n == 0 {
            return Err(meta.error(GgufVocab::KEY_TOKENS, "the vocabulary has no tokens"));
        }
        if u32::try_from(n).is_err() {
            return Err(meta.error(
                GgufVocab::KEY_TOKENS,
                format!("{n} tokens do not fit 32-bit ids"),
            ));
        }
        let scores = match &meta.scores {
            Some(s) if s.len() < n => {
                return Err(meta.error(
                    GgufVocab::KEY_SCORES,
                    format!("{} scores for {n} tokens", s.len()),
                ))
            }
            Some(s) => s[..n].to_vec(),
            None => vec![0.0; n],
        };
        let mut kinds = match &meta.token_types {
            Some(t) if t.len() < n => {
                return Err(meta.error(
                    GgufVocab::KEY_TOKEN_TYPE,
                    format!("{} token types for {n} tokens", t.len()),
                ))
            }
            Some(t) => t[..n].iter().map(|&t| TokenKind::from_type(t)).collect(),
            None => vec![TokenKind::Normal; n],
        };
        let mut texts = Vec::with_capacity(n);
        let mut ids = HashMap::with_capacity(n);
        for (i, text) in meta.tokens.iter().enumerate() {
            let text: Cow<'a, str> = if text.is_empty() {
                Cow::Owned(format!("[EMPTY_{i}]"))
            } else {
                Cow::Borrowed(text)
            };
            if let Some(first) = ids.insert(text.clone(), i as u32) {
                return Err(meta.error(
                    GgufVocab::KEY_TOKENS,
                    format!("token {i} {text:?} duplicates token {first}"),
                ));
            }
            texts.push(text);
        }
        for (text, kind) in texts.iter().zip(kinds.iter_mut()) {
            if USER_DEFINED_BY_TEXT.contains(&text.as_ref()) {
                *kind = TokenKind::UserDefined;
            } else if CONTROL_BY_TEXT.contains(&text.as_ref()) && !kind.is_split_out() {
                *kind = TokenKind::Control;
            }
        }

        let (preset, default_bos, default_eos, default_unk, default_add_bos) =
            match meta.model.as_str() {
                "llama" => (None, Some(1), Some(2), Some(0), true),
                "gpt2" => {
                    let preset = resolve_preset(meta)?;
                    let bos = (!preset.no_default_bos).then_some(11);
                    (Some(preset), bos, Some(11), None, preset.add_bos)
                }
                // The model is refused by the caller; nothing below depends on it.
                _ => (None, None, None, None, false),
            };
        let id = |key: &str, given: Option<u32>, default: Option<u32>| -> Result<Option<u32>> {
            match given {
                Some(id) if id as usize >= n => Err(meta.error(
                    key,
                    format!("token id {id} is past the vocabulary of {n} tokens"),
                )),
                Some(id) => Ok(Some(id)),
                // llama.cpp drops a default that is past the vocabulary.
                None => Ok(default.filter(|&d| (d as usize) < n)),
            }
        };
        let bos = id(GgufVocab::KEY_BOS_ID, meta.bos_id, default_bos)?;
        let eos = id(GgufVocab::KEY_EOS_ID, meta.eos_id, default_eos)?;
        let unk = id(GgufVocab::KEY_UNK_ID, meta.unk_id, default_unk)?;
        for (key, given) in [
            (GgufVocab::KEY_EOT_ID, meta.eot_id),
            (GgufVocab::KEY_EOM_ID, meta.eom_id),
            (GgufVocab::KEY_PAD_ID, meta.pad_id),
        ] {
            id(key, given, None)?;
        }
        let add_bos = meta.add_bos.unwrap_or(default_add_bos);
        let add_eos = meta.add_eos.unwrap_or(false);
        if add_bos && bos.is_none() {
            return Err(meta.error(
                GgufVocab::KEY_ADD_BOS,
                format!(
                    "BOS is to be added but {} is not set",
                    GgufVocab::KEY_BOS_ID
                ),
            ));
        }
        if add_eos && eos.is_none() {
            return Err(meta.error(
                GgufVocab::KEY_ADD_EOS,
                format!(
                    "EOS is to be added but {} is not set",
                    GgufVocab::KEY_EOS_ID
                ),
            ));
        }
        Ok(Checked {
            texts,
            kinds,
            scores,
            ids,
            preset,
            bos,
            eos,
            unk,
            add_bos,
            add_eos,
        })
    }
}

/// The preset `tokenizer.ggml.pre` names (`"default"` when absent, as in llama.cpp).
fn resolve_preset(meta: &GgufVocab) -> Result<Preset> {
    let name = meta.pre.as_deref().unwrap_or("default");
    match Preset::of(name) {
        Ok(Some(preset)) => Ok(preset),
        Ok(None) => Err(meta.error(
            GgufVocab::KEY_PRE,
            format!("unknown pre-tokenizer {name:?}"),
        )),
        Err(why) => Err(meta.error(
            GgufVocab::KEY_PRE,
            format!("pre-tokenizer {name:?} is not supported: {why}"),
        )),
    }
}

/// See [`GgufVocab::end_of_generation_ids`].
pub(super) fn end_of_generation_ids(meta: &GgufVocab) -> Vec<u32> {
    let ids = [meta.eos_id, meta.eot_id, meta.eom_id];
    eog_ids(&meta.model, meta.tokens.iter().map(String::as_str), ids)
}

/// See [`super::end_of_generation_ids`]: `ids` are EOS, EOT and EOM.
pub(super) fn eog_ids<'a>(
    model: &str,
    tokens: impl ExactSizeIterator<Item = &'a str>,
    [eos, eot, eom]: [Option<u32>; 3],
) -> Vec<u32> {
    let n = tokens.len();
    let mut out: Vec<u32> = tokens
        .enumerate()
        .filter(|(_, t)| EOG_BY_TEXT.contains(t))
        .map(|(i, _)| i as u32)
        .collect();
    let eos_default = match model {
        "llama" => Some(2),
        "gpt2" => Some(11),
        _ => None,
    };
    out.extend([eos.or(eos_default), eot, eom].into_iter().flatten());
    out.retain(|&id| (id as usize) < n);
    out.sort_unstable();
    out.dedup();
    out
}
