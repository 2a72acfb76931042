//! Keeping a sequence's KV cache between the turns of a conversation, so that each turn
//! prefills only what the cache does not already hold.
//!
//! A chat prompt is the whole conversation rendered again at every turn; all of it but the
//! new messages is usually the start of what the model has already seen (the previous prompt
//! and the reply it generated). [`Conversation`] remembers the tokens the model's cache
//! holds; [`Conversation::model`] lends the model back as a [`LanguageModel`] whose
//! [`reset`](LanguageModel::reset) keeps the cache, and whose first
//! [`forward`](LanguageModel::forward) after it truncates the cache to the longest common
//! prefix of what it holds and the new prompt, then feeds only the rest (at least one token,
//! for the logits). Any loop written against [`LanguageModel`] ([`crate::generate()`]) runs on
//! it unchanged.
//!
//! The logits are those of a fresh prefill of the whole prompt whenever the model computes a
//! position the same way alone or after a cached prefix (sieve's host path does: each row's
//! reductions run in a fixed order); a chat test checks a reply against a one-shot run.
//!
//! A template that renders earlier turns differently once a later one exists (some drop the
//! reasoning of past replies) only shortens the reused prefix; it never changes the result.

use crate::model::LanguageModel;
use crate::Result;

/// The tokens a model's cache holds across the turns of one conversation.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// Every token fed to the model since its last reset, in order.
    held: Vec<u32>,
    /// Of the last prompt, how many tokens came from the cache.
    reused: usize,
    /// The logits the last prompt's prefill returned (the first generated token's row).
    first_logits: Option<Vec<f32>>,
}

impl Conversation {
    /// A conversation whose model cache is empty (call [`LanguageModel::reset`] on the model
    /// first if it holds anything).
    pub fn new() -> Self {
        Self::default()
    }

    /// The tokens the model's cache holds.
    pub fn held(&self) -> &[u32] {
        &self.held
    }

    /// How many tokens of the last prompt were reused from the cache (not fed again).
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// The logits of the last prompt's prefill: the row the first token of the last reply
    /// was chosen from.
    pub fn first_logits(&self) -> Option<&[f32]> {
        self.first_logits.as_deref()
    }

    /// Forgets everything: the cache of `model` is emptied too.
    pub fn clear(&mut self, model: &mut dyn LanguageModel) {
        model.reset();
        self.held.clear();
        self.reused = 0;
        self.first_logits = None;
    }

    /// `model` as a [`LanguageModel`] that reuses this conversation's cache. `model` must
    /// hold exactly [`Conversation::held`] (it does when only this conversation feeds it).
    pub fn model<'a>(&'a mut self, model: &'a mut dyn LanguageModel) -> Reusing<'a> {
        Reusing {
            conversation: self,
            model,
            fresh: false,
        }
    }
}

/// A model lent by [`Conversation::model`].
pub struct Reusing<'a> {
    conversation: &'a mut Conversation,
    model: &'a mut dyn LanguageModel,
    /// Set by `reset`: the next `forward` is a prompt, compared with the cache.
    fresh: bool,
}

impl LanguageModel for Reusing<'_> {
    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn context_len(&self) -> usize {
        self.model.context_len()
    }

    fn position(&self) -> usize {
        if self.fresh {
            0
        } else {
            self.model.position()
        }
    }

    /// Starts a new prompt without emptying the cache: the next `forward` keeps what it can.
    fn reset(&mut self) {
        self.fresh = true;
    }

    fn truncate(&mut self, len: usize) {
        self.model.truncate(len);
        self.conversation.held.truncate(len);
    }

    fn reserve(&mut self, positions: usize) {
        self.model.reserve(positions);
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        if !self.fresh {
            let logits = self.model.forward(tokens)?;
            self.conversation.held.extend_from_slice(tokens);
            return Ok(logits);
        }
        self.fresh = false;
        let c = &mut *self.conversation;
        let common = c
            .held
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count();
        // At least one token is fed: its logits are the answer.
        let keep = common.min(tokens.len().saturating_sub(1));
        if keep == 0 {
            self.model.reset();
        } else {
            self.model.truncate(keep);
        }
        c.held.truncate(keep);
        c.reused = keep;
        c.first_logits = None;
        let logits = self.model.forward(&tokens[keep..])?;
        c.held.extend_from_slice(&tokens[keep..]);
        c.first_logits = Some(logits.clone());
        Ok(logits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose logits depend on every token it holds (a running hash), counting the
    /// tokens it is fed.
    struct Hashing {
        held: Vec<u32>,
        fed: usize,
    }

    impl LanguageModel for Hashing {
        fn vocab_size(&self) -> usize {
            4
        }
        fn context_len(&self) -> usize {
            64
        }
        fn position(&self) -> usize {
            self.held.len()
        }
        fn reset(&mut self) {
            self.held.clear();
        }
        fn truncate(&mut self, len: usize) {
            self.held.truncate(len);
        }
        fn forward(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
            self.fed += tokens.len();
            self.held.extend_from_slice(tokens);
            let h = self
                .held
                .iter()
                .fold(7u32, |h, &t| h.wrapping_mul(31).wrapping_add(t));
            Ok((0..4).map(|i| (h.wrapping_add(i) % 97) as f32).collect())
        }
    }

    fn fresh() -> Hashing {
        Hashing {
            held: Vec::new(),
            fed: 0,
        }
    }

    /// Feeds `prompt` as a new prompt through `conversation`, then `reply` one token at a
    /// time (the last one is not fed, as in a generation ending on it).
    fn turn(c: &mut Conversation, m: &mut Hashing, prompt: &[u32], reply: &[u32]) -> Vec<f32> {
        let mut model = c.model(m);
        model.reset();
        let first = model.forward(prompt).unwrap();
        for &t in &reply[..reply.len().saturating_sub(1)] {
            model.forward(&[t]).unwrap();
        }
        first
    }

    #[test]
    fn only_the_new_part_is_fed_and_the_logits_are_a_fresh_prefills() {
        let mut c = Conversation::new();
        let mut m = fresh();
        let first = turn(&mut c, &mut m, &[1, 2, 3], &[9, 8, 0]);
        assert_eq!((c.reused(), m.fed), (0, 5));
        assert_eq!(c.held(), [1, 2, 3, 9, 8]);
        assert_eq!(c.first_logits(), Some(&first[..]));

        // The next prompt repeats the conversation (the reply re-rendered with its end
        // token 0) and adds a turn.
        let prompt = [1, 2, 3, 9, 8, 0, 5, 6];
        let got = turn(&mut c, &mut m, &prompt, &[]);
        assert_eq!((c.reused(), m.fed), (5, 8));
        let mut alone = fresh();
        assert_eq!(got, alone.forward(&prompt).unwrap());

        // A prompt that diverges early (an /undo) truncates the cache there.
        let prompt = [1, 2, 4];
        let got = turn(&mut c, &mut m, &prompt, &[]);
        assert_eq!(c.reused(), 2);
        assert_eq!(got, fresh().forward(&prompt).unwrap());

        // The same prompt again still feeds its last token, for the logits.
        let got = turn(&mut c, &mut m, &prompt, &[]);
        assert_eq!(c.reused(), 2);
        assert_eq!(got, fresh().forward(&prompt).unwrap());

        // Nothing in common: the cache starts over.
        turn(&mut c, &mut m, &[3], &[]);
        assert_eq!((c.reused(), c.held()), (0, &[3][..]));
        c.clear(&mut m);
        assert_eq!((c.held(), m.position()), (&[][..], 0));
    }
}
