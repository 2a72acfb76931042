//! One choice of a request while it decodes: its sequence in the model, its own pipeline
//! (stage state and random stream), candidates buffer and [`Emitter`].

use sieve_core::{Candidates, Context, Pipeline, Vocab};

use super::logprobs;
use super::request::{Event, LogprobMode, LogprobsSpec};
use crate::batch::SeqId;
use crate::emit::{Emitter, EndRules};
use crate::model::Detokenize;
use crate::stats::FinishReason;
use crate::{Error, Result};

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
    out: Emitter<'static>,
    candidates: Candidates,
    /// Bytes of `out.text()` already sent.
    sent: usize,
}

/// The emitter's text callback: a closure capturing nothing, so the box holds zero bytes and
/// leaking it leaks nothing. The text is read back with [`Emitter::text`] instead.
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
            out: Emitter::new(detokenizer, prompt, discard())?,
            candidates: Candidates::new(),
            sent: 0,
        })
    }

    /// Samples the next token from `logits`, records it, and returns its [`Event::Token`]
    /// and why the choice ends with it, if it does.
    ///
    /// # Errors
    /// [`Error::LogitsLength`], [`Error::ModelNan`], a stage's error, the detokenizer's.
    pub fn advance(
        &mut self,
        logits: Vec<f32>,
        detokenizer: &dyn Detokenize,
        rules: &EndRules,
        vocab: Option<&Vocab>,
        spec: Option<LogprobsSpec>,
        vocab_size: usize,
    ) -> Result<(Event, Option<FinishReason>)> {
        if logits.len() != vocab_size {
            return Err(Error::LogitsLength {
                expected: vocab_size,
                found: logits.len(),
            });
        }
        let step = self.out.generated().len();
        let raw = spec
            .filter(|s| s.mode == LogprobMode::Raw)
            .map(|_| logits.clone());
        let nan = self.candidates.load_owned(logits);
        if nan > 0 {
            return Err(Error::ModelNan {
                step,
                count: nan,
                vocab: vocab_size,
            });
        }
        let cx = Context {
            history: self.out.history(),
            prompt_len: self.out.prompt_len(),
            vocab,
            step,
        };
        let token = self.pipeline.sample(&mut self.candidates, &cx)?;
        self.pipeline.accept(token);
        let logprobs = spec.map(|s| match &raw {
            Some(raw) => logprobs::from_logits(raw, token, s.top),
            None => logprobs::from_candidates(&self.candidates, token, s.top),
        });
        self.last = token;
        let finish = self.out.push(detokenizer, token, rules)?;
        let text = self.out.text()[self.sent..].to_string();
        self.sent = self.out.text().len();
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
