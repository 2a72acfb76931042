//! `tokenizer.ggml.model = gpt2`: byte-level BPE, as llama.cpp's `llm_tokenizer_bpe_session`
//! runs it.
//!
//! Text between special tokens is split by the preset's regexes ([`super::presets`]), each
//! piece is byte-level encoded (every byte drawn as a printable character, `Ġ` for a space)
//! and merged pair by pair, lowest merge rank first (the merge list's order). With the
//! preset's `ignore_merges`, a piece that is itself a token is taken whole.

use std::collections::HashSet;

use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{DecoderWrapper, PreTokenizerWrapper, SplitDelimiterBehavior};
use tokenizers::{ModelWrapper, Tokenizer as HfTokenizer};

use super::presets::{translate, Preset};
use super::vocab::Checked;
use super::GgufVocab;
use crate::Result;

/// Builds the byte-level BPE tokenizer.
pub(super) fn build(meta: &GgufVocab, c: &Checked) -> Result<HfTokenizer> {
    let preset = c
        .preset
        .ok_or_else(|| meta.error(GgufVocab::KEY_PRE, "no pre-tokenizer for a gpt2 vocabulary"))?;
    let merges = parse_merges(meta, c)?;
    let vocab: Vocab = c.ids.iter().map(|(t, &id)| (t.to_string(), id)).collect();
    let model = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .ignore_merges(preset.ignore_merges)
        .build()
        .map_err(|e| meta.error(GgufVocab::KEY_MERGES, e.to_string()))?;
    let mut tokenizer = HfTokenizer::new(ModelWrapper::BPE(model));
    tokenizer.with_pre_tokenizer(Some(pre_tokenizer(meta, &preset)?));
    tokenizer.with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevel::new(
        false, false, false,
    ))));
    super::special::finish(&mut tokenizer, meta, c)?;
    Ok(tokenizer)
}

/// The preset's regex splits, then byte-level encoding without a regex of its own.
fn pre_tokenizer(meta: &GgufVocab, preset: &Preset) -> Result<PreTokenizerWrapper> {
    let mut steps = Vec::with_capacity(preset.regexes.len() + 1);
    for regex in preset.regexes {
        let split = Split::new(
            SplitPattern::Regex(translate(regex)),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| meta.error(GgufVocab::KEY_PRE, format!("regex {regex:?}: {e}")))?;
        steps.push(PreTokenizerWrapper::Split(split));
    }
    steps.push(PreTokenizerWrapper::ByteLevel(ByteLevel::new(
        false, false, false,
    )));
    Ok(PreTokenizerWrapper::Sequence(Sequence::new(steps)))
}

/// `"left right"` per merge, split at the first space after the first byte (as llama.cpp
/// splits them); both sides and their concatenation must be tokens. A repeated merge (the
/// same pair of token ids) keeps its first rank, as llama.cpp's rank table does.
fn parse_merges(meta: &GgufVocab, c: &Checked) -> Result<Vec<(String, String)>> {
    let Some(lines) = &meta.merges else {
        return Err(meta.error(
            GgufVocab::KEY_MERGES,
            "missing: a gpt2 vocabulary needs its merges",
        ));
    };
    let mut seen = HashSet::with_capacity(lines.len());
    let mut merges = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let split = line
            .as_bytes()
            .iter()
            .skip(1)
            .position(|&b| b == b' ')
            .map(|p| p + 1);
        let Some(at) = split else {
            return Err(meta.error(
                GgufVocab::KEY_MERGES,
                format!("merge {i} {line:?} is not two tokens separated by a space"),
            ));
        };
        let (left, right) = (&line[..at], &line[at + 1..]);
        let id = |part: &str| {
            c.ids.get(part).copied().ok_or_else(|| {
                meta.error(
                    GgufVocab::KEY_MERGES,
                    format!("merge {i} {line:?} names {part:?}, which is not a token"),
                )
            })
        };
        let pair = (id(left)?, id(right)?);
        id(&format!("{left}{right}"))?;
        if seen.insert(pair) {
            merges.push((left.to_string(), right.to_string()));
        }
    }
    Ok(merges)
}
