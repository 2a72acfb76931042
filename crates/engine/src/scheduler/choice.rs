//! One choice of a request while it decodes: its sequence in the model, its own pipeline
//! (stage state and random stream) and its [`Decoder`] (the [step](crate::step) every
//! generation mode shares).

use sieve_core::{Pipeline, Vocab};

use super::logprobs;
use super::request::{Event, LogprobMode, LogprobsSpec};
use crate::batch::SeqId;
use crate::emit::EndRules;
use crate::model::Detokenize;
use crate::stats::FinishReason;
use crate::step::{Decoder, Sampled};
use crate::Result;

/// A decoding choice.
pub(super) struct Choice {
    /// The request it belongs to.
    pub request: u64,
    /// Its index among the request's choices.
    pub index: usize,
    /// Its sequence in the model.
    pub seq: SeqId,
    /// The token to feed next.
    pub last: u32,
    pipeline: Pipeline,
    out: Decoder<'static>,
    /// Bytes of `out.text()` already sent.
    sent: usize,
}

/// The emitter's text callback: a closure capturing nothing, so the box holds zero bytes and
/// leaking it leaks nothing. The text is read back with [`Emitter::text`](crate::Emitter::text) instead.
fn discard() -> &'static mut dyn FnMut(&str) {
    Box::leak(Box::new(|_: &str| {}))
}

impl Choice {
    /// Choice `index` of `request`, on `seq` which holds `prompt`. The pipeline is reset and
    /// sees every prompt token through `accept`, as [`crate::generate()`] does.
    ///
    /// # Errors
    /// What `detokenizer` returns on the prompt.
    pub fn new(
        request: u64,
        index: usize,
        seq: SeqId,
        mut pipeline: Pipeline,
        prompt: &[u32],
        detokenizer: &dyn Detokenize,
        vocab_size: usize,
    ) -> Result<Self> {
        pipeline.reset();
        for &t in prompt {
            pipeline.accept(t);
        }
        Ok(Choice {
            request,
            index,
            seq,
            last: 0,
            pipeline,
            out: Decoder::new(detokenizer, prompt, vocab_size, discard())?,
            sent: 0,
        })
    }

    /// Samples the next token from `logits`, records it, and returns its [`Event::Token`]
    /// and why the choice ends with it, if it does.
    ///
    /// # Errors
    /// [`Error::LogitsLength`](crate::Error::LogitsLength), [`Error::ModelNan`](crate::Error::ModelNan), a stage's error, the detokenizer's.
    pub fn advance(
        &mut self,
        logits: Vec<f32>,
        detokenizer: &dyn Detokenize,
        rules: &EndRules,
        vocab: Option<&Vocab>,
        spec: Option<LogprobsSpec>,
    ) -> Result<(Event, Option<FinishReason>)> {
        let keep_raw = spec.is_some_and(|s| s.mode == LogprobMode::Raw);
        let Sampled { token, raw } =
            self.out
                .sample(&mut self.pipeline, logits, vocab, keep_raw)?;
        let logprobs = spec.map(|s| match &raw {
            Some(raw) => logprobs::from_logits(raw, token, s.top),
            None => logprobs::from_candidates(self.out.candidates(), token, s.top),
        });
        self.last = token;
        let finish = self.out.emit(detokenizer, token, rules)?;
        let text = self.out.emitter().text()[self.sent..].to_string();
        self.sent = self.out.emitter().text().len();
        let event = Event::Token {
            choice: self.index,
            token,
            text,
            logprobs,
        };
        Ok((event, finish))
    }

    /// Ends the choice for `reason` and returns its [`Event::Finished`].
    ///
    /// # Errors
    /// What the detokenizer returns.
    pub fn finish(
        self,
        detokenizer: &dyn Detokenize,
        reason: FinishReason,
        rules: &EndRules,
    ) -> Result<Event> {
        let sent = self.sent;
        let (text, tokens, reason) = self.out.finish(detokenizer, reason, rules)?;
        Ok(Event::Finished {
            choice: self.index,
            text: text[sent..].to_string(),
            reason,
            tokens: tokens.len(),
        })
    }
}
