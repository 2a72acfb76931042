//! `tokenizer.ggml.model = llama`: SentencePiece-style tokenizing, as llama.cpp's
//! `llm_tokenizer_spm_session` runs it.
//!
//! llama.cpp prepends a space to every piece of text between special tokens (with
//! `add_space_prefix`), writes spaces as `▁`, starts from the piece's characters and merges,
//! again and again, the adjacent pair whose concatenation is the token with the **highest
//! score** (the leftmost such pair on a tie); characters no token covers become their UTF-8
//! bytes as `<0xNN>` tokens. There is no merge list: the scores rank the merges.
//!
//! That is BPE whose merges are every split of a token into two tokens, ranked by the score of
//! the token they make: built so here (`tokenizers`' BPE with byte fallback). Two different
//! tokens with the same score are ranked by id, where llama.cpp would take the leftmost pair;
//! real vocabularies give their pieces distinct scores, so this matters only for hand-made
//! ones.

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::{DecoderWrapper, ModelWrapper, NormalizerWrapper, Tokenizer as HfTokenizer};

use super::vocab::Checked;
use super::GgufVocab;
use crate::Result;

/// The character SentencePiece writes for a space.
const SPACE: &str = "\u{2581}";

/// Builds the SentencePiece-style tokenizer.
pub(super) fn build(meta: &GgufVocab, c: &Checked) -> Result<HfTokenizer> {
    let add_space_prefix = meta.add_space_prefix.unwrap_or(true);
    let vocab: Vocab = c.ids.iter().map(|(t, &id)| (t.to_string(), id)).collect();
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab, merges_by_score(meta, c)?)
        .byte_fallback(true);
    if let Some(unk) = c.unk {
        builder = builder.unk_token(c.texts[unk as usize].to_string());
    }
    let model = builder
        .build()
        .map_err(|e| meta.error(GgufVocab::KEY_SCORES, e.to_string()))?;
    let mut tokenizer = HfTokenizer::new(ModelWrapper::BPE(model));

    let escape =
        Replace::new(" ", SPACE).map_err(|e| meta.error(GgufVocab::KEY_MODEL, e.to_string()))?;
    let normalizer = if add_space_prefix {
        NormalizerWrapper::Sequence(NormalizerSequence::new(vec![
            NormalizerWrapper::Prepend(Prepend::new(SPACE.to_string())),
            NormalizerWrapper::Replace(escape),
        ]))
    } else {
        NormalizerWrapper::Replace(escape)
    };
    tokenizer.with_normalizer(Some(normalizer));

    let unescape = tokenizers::decoders::DecoderWrapper::Replace(
        Replace::new(SPACE, " ").map_err(|e| meta.error(GgufVocab::KEY_MODEL, e.to_string()))?,
    );
    let mut decoders = vec![
        unescape,
        DecoderWrapper::ByteFallback(ByteFallback::new()),
        DecoderWrapper::Fuse(Fuse::new()),
    ];
    if add_space_prefix {
        // llama.cpp's detokenize drops the space it prepended: the first one of the text.
        decoders.push(DecoderWrapper::Strip(Strip::new(' ', 1, 0)));
    }
    tokenizer.with_decoder(Some(DecoderWrapper::Sequence(DecoderSequence::new(
        decoders,
    ))));
    super::special::finish(&mut tokenizer, meta, c)?;
    Ok(tokenizer)
}

/// Tokens longer than this many bytes are never taken as made by a merge (SentencePiece
/// pieces are at most 16 characters by default); this bounds the work a hostile vocabulary
/// of long tokens can ask for.
const MAX_MERGED_BYTES: usize = 256;

/// Every split of a token into two tokens, the splits of higher-scored tokens first (ties by
/// token id, then by split position).
///
/// # Errors
/// When the merges would take far more memory than the tokens (more than 64 times their
/// bytes, plus 1 MiB): no trained vocabulary comes near that (1.3 times on a 4 000-piece BPE
/// model).
fn merges_by_score(meta: &GgufVocab, c: &Checked) -> Result<Vec<(String, String)>> {
    let token_bytes: usize = c.texts.iter().map(|t| t.len()).sum();
    let budget = token_bytes.saturating_mul(64).saturating_add(1 << 20);
    let mut used = 0usize;
    let mut ranked: Vec<(u32, usize)> = Vec::new();
    let mut merges = Vec::new();
    for (id, text) in c.texts.iter().enumerate() {
        if text.len() > MAX_MERGED_BYTES {
            continue;
        }
        for (at, _) in text.char_indices().skip(1) {
            let (left, right) = text.split_at(at);
            if c.ids.contains_key(left) && c.ids.contains_key(right) {
                used += text.len();
                if used > budget {
                    return Err(meta.error(
                        GgufVocab::KEY_TOKENS,
                        format!(
                            "the vocabulary splits into more merges than {budget} bytes allow \
                             (token {id})"
                        ),
                    ));
                }
                ranked.push((id as u32, merges.len()));
                merges.push((left.to_string(), right.to_string()));
            }
        }
    }
    ranked.sort_by(|a, b| {
        let (sa, sb) = (c.scores[a.0 as usize], c.scores[b.0 as usize]);
        sb.total_cmp(&sa).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1))
    });
    Ok(ranked
        .into_iter()
        .map(|(_, i)| std::mem::take(&mut merges[i]))
        .collect())
}
