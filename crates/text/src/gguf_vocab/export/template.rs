//! The post-processor of `tokenizer.json` as GGUF states it: the one token it adds before the
//! text (BOS, `add_bos_token`) and the one after (EOS, `add_eos_token`).

use std::collections::HashMap;

use serde_json::Value as Json;

use super::Builder;
use crate::Result;

impl Builder<'_> {
    /// The tokens the post-processor adds before and after the text: `(BOS, EOS)`.
    pub(super) fn template(&self, ids: &HashMap<&str, u32>) -> Result<(Option<u32>, Option<u32>)> {
        let mut bos = None;
        let mut eos = None;
        let post = match self.json.get("post_processor") {
            None | Some(Json::Null) => return Ok((None, None)),
            Some(p) => p,
        };
        let steps: Vec<&Json> = match post.get("processors").and_then(Json::as_array) {
            Some(list) => list.iter().collect(),
            None => vec![post],
        };
        for step in steps {
            match step.get("type").and_then(Json::as_str).unwrap_or("?") {
                "ByteLevel" => {}
                "TemplateProcessing" => {
                    let single = step
                        .get("single")
                        .and_then(Json::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default();
                    let special = |piece: &Json| -> Option<String> {
                        Some(piece.get("SpecialToken")?.get("id")?.as_str()?.to_string())
                    };
                    let is_a = |piece: &Json| {
                        piece
                            .get("Sequence")
                            .and_then(|s| s.get("id"))
                            .and_then(Json::as_str)
                            == Some("A")
                    };
                    let Some(at) = single.iter().position(is_a) else {
                        return Err(
                            self.error("post_processor.single", "a template without the text ($A)")
                        );
                    };
                    let (before, after) = (&single[..at], &single[at + 1..]);
                    if before.len() > 1 || after.len() > 1 {
                        return Err(self.error(
                            "post_processor.single",
                            "more than one token before or after the text: GGUF adds at most \
                             BOS before and EOS after",
                        ));
                    }
                    let token = |piece: &Json| -> Result<u32> {
                        let name = special(piece).ok_or_else(|| {
                            self.error("post_processor.single", "a piece that is not a token")
                        })?;
                        let text = step
                            .get("special_tokens")
                            .and_then(|s| s.get(&name))
                            .and_then(|s| s.get("tokens"))
                            .and_then(Json::as_array)
                            .map(|t| t.iter().filter_map(Json::as_str).collect::<Vec<_>>());
                        match text.as_deref() {
                            Some([one]) => self.id_of(ids, "post_processor", one),
                            None => self.id_of(ids, "post_processor", &name),
                            Some(_) => Err(self.error(
                                "post_processor.special_tokens",
                                format!("{name:?} stands for other than one token"),
                            )),
                        }
                    };
                    bos = before.first().map(token).transpose()?;
                    eos = after.first().map(token).transpose()?;
                }
                other => {
                    return Err(self.error(
                        "post_processor",
                        format!("{other:?}: GGUF states only BOS and EOS around the text"),
                    ))
                }
            }
        }
        Ok((bos, eos))
    }
}
