//! The scores of a SentencePiece-style (`llama`) vocabulary, from the BPE merge ranks: what
//! makes llama.cpp's highest-score-first merging pick the merges Hugging Face's lowest-rank-
//! first merging picks (see the parent module's docs).

use std::collections::{HashMap, HashSet};

use super::{type_of, Builder};
use crate::gguf_vocab::vocab::TokenKind;
use crate::Result;

/// The character SentencePiece writes for a space.
const SPACE: char = '\u{2581}';

/// Tokens longer than this are not checked for splits (the reader never merges into them).
const MAX_CHECKED_BYTES: usize = 256;

impl Builder<'_> {
    /// The scores of a SentencePiece-style vocabulary: minus the rank of the first merge
    /// making each token; tokens no merge makes score below every merge.
    pub(super) fn scores(
        &self,
        tokens: &[String],
        types: &[i32],
        merges: &[(String, String)],
    ) -> Result<Vec<f32>> {
        let ids: HashMap<&str, usize> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_str(), i))
            .collect();
        let mut first: Vec<Option<usize>> = vec![None; tokens.len()];
        let mut made: HashSet<(&str, &str)> = HashSet::with_capacity(merges.len());
        let mut last_made: Option<usize> = None;
        for (rank, (l, r)) in merges.iter().enumerate() {
            let Some(&t) = ids.get(format!("{l}{r}").as_str()) else {
                return Err(self.error(&format!("model.merges[{rank}]"), "makes no token"));
            };
            made.insert((l.as_str(), r.as_str()));
            match first[t] {
                None => first[t] = Some(rank),
                Some(_) if last_made == Some(t) => {}
                Some(f) => {
                    return Err(self.error(
                        &format!("model.merges[{rank}]"),
                        format!(
                            "makes {:?} again after merges making other tokens (first at \
                             {f}): llama.cpp ranks a merge by the token it makes",
                            tokens[t]
                        ),
                    ))
                }
            }
            last_made = Some(t);
        }
        // Every way llama.cpp could make a token (two tokens, or single characters, it
        // starts from characters) must be a merge, else it would make tokens BPE does not.
        // Tokens split out of the text before merging cannot be made, unless they hold a `▁`
        // the text gets only from the space replacement; byte tokens and padding never.
        for (id, text) in tokens.iter().enumerate() {
            let split_out = [
                TokenKind::Control,
                TokenKind::Unknown,
                TokenKind::UserDefined,
            ]
            .iter()
            .any(|&k| types[id] == type_of(k));
            let never = [TokenKind::Byte, TokenKind::Unused]
                .iter()
                .any(|&k| types[id] == type_of(k));
            if never || (split_out && !text.contains(SPACE)) || text.len() > MAX_CHECKED_BYTES {
                continue;
            }
            for (at, _) in text.char_indices().skip(1) {
                let (l, r) = text.split_at(at);
                let reachable = |s: &str| ids.contains_key(s) || s.chars().nth(1).is_none();
                if reachable(l) && reachable(r) && !made.contains(&(l, r)) {
                    return Err(self.error(
                        "model.merges",
                        format!(
                            "{l:?} + {r:?} is not a merge, but llama.cpp would merge them into \
                             the token {text:?} (its SentencePiece-style tokenizer merges any \
                             pair that makes a token)"
                        ),
                    ));
                }
            }
        }
        let floor = -(merges.len() as f32) - 1.0;
        Ok(first
            .iter()
            .map(|f| f.map_or(floor, |rank| -(rank as f32)))
            .collect())
    }
}
