//! What both models share: the tokens split out of the text before tokenizing (added tokens)
//! and BOS/EOS around a sequence (a template post-processor).

use tokenizers::{AddedToken, PostProcessorWrapper, Tokenizer as HfTokenizer};

use super::vocab::{Checked, TokenKind};
use super::GgufVocab;
use crate::Result;

/// Adds the tokens llama.cpp splits out of the text (control, unknown and user-defined
/// kinds) to `tokenizer`, matched on the raw text; control and unknown ones as special
/// tokens (skipped when decoding skips special tokens), user-defined ones as plain added
/// tokens. Then the BOS/EOS template.
pub(super) fn finish(tokenizer: &mut HfTokenizer, meta: &GgufVocab, c: &Checked) -> Result<()> {
    let mut special = Vec::new();
    let mut plain = Vec::new();
    for (text, kind) in c.texts.iter().zip(&c.kinds) {
        match kind {
            TokenKind::Control | TokenKind::Unknown => {
                special.push(AddedToken::from(text.to_string(), true).normalized(false));
            }
            TokenKind::UserDefined => {
                plain.push(AddedToken::from(text.to_string(), false).normalized(false));
            }
            _ => {}
        }
    }
    tokenizer.add_special_tokens(&special);
    tokenizer.add_tokens(&plain);
    if let Some(post) = template(meta, c)? {
        tokenizer.with_post_processor(Some(post));
    }
    Ok(())
}

/// `BOS $A EOS` (each only when added), as `tokenizers` reads a template from
/// `tokenizer.json`; `None` when neither is added.
fn template(meta: &GgufVocab, c: &Checked) -> Result<Option<PostProcessorWrapper>> {
    let bos = c.bos.filter(|_| c.add_bos);
    let eos = c.eos.filter(|_| c.add_eos);
    if bos.is_none() && eos.is_none() {
        return Ok(None);
    }
    let piece =
        |id: u32| serde_json::json!({"SpecialToken": {"id": c.texts[id as usize], "type_id": 0}});
    let seq = |name: &str, type_id: u32| serde_json::json!({"Sequence": {"id": name, "type_id": type_id}});
    let mut single = Vec::new();
    let mut pair = Vec::new();
    let mut specials = serde_json::Map::new();
    if let Some(b) = bos {
        single.push(piece(b));
        pair.push(piece(b));
    }
    single.push(seq("A", 0));
    pair.push(seq("A", 0));
    if let Some(e) = eos {
        single.push(piece(e));
        pair.push(piece(e));
    }
    if let Some(b) = bos {
        pair.push(piece(b));
    }
    pair.push(seq("B", 1));
    if let Some(e) = eos {
        pair.push(piece(e));
    }
    for id in bos.into_iter().chain(eos) {
        let text = &c.texts[id as usize];
        specials.insert(
            text.to_string(),
            serde_json::json!({"id": text, "ids": [id], "tokens": [text]}),
        );
    }
    let value = serde_json::json!({
        "type": "TemplateProcessing",
        "single": single,
        "pair": pair,
        "special_tokens": specials,
    });
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| meta.error(GgufVocab::KEY_ADD_BOS, format!("BOS/EOS template: {e}")))
}
