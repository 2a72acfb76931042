//! What happens to one sequence's chosen tokens: the history grows, EOS and the token limit
//! end it, the text is decoded incrementally (complete UTF-8 only), searched for stop strings
//! and streamed except the longest ending that may still become one. Every generation mode
//! (plain, parallel samples, speculative) feeds its tokens through an [`Emitter`], so they all
//! end and stream alike.

use crate::detok::IncrementalDecoder;
use crate::model::{Detokenize, SkipSpecial};
use crate::stats::FinishReason;
use crate::stop::{Scanned, StopScan, StopStrings};
use crate::Result;

/// The rules that end a sequence, and which tokens its text shows.
#[derive(Debug, Clone)]
pub struct EndRules {
    /// The most tokens to generate (an EOS token counts).
    pub max_tokens: usize,
    /// The most tokens the sequence may hold, prompt included (the model's context).
    pub context: usize,
    /// End-of-sequence ids: choosing one ends the sequence (its text is not emitted).
    pub eos: Vec<u32>,
    /// Stop strings (matched against the text as written, so with special tokens left out
    /// unless `show_special`).
    pub stops: StopStrings,
    /// Whether special tokens (BOS, EOS when generated past, chat markers) are written into
    /// the text; by default they are left out, as transformers' `skip_special_tokens=True`.
    pub show_special: bool,
}

impl EndRules {
    /// The detokenizer that writes text under these rules.
    fn writer<'d>(
        &self,
        detokenizer: &'d dyn Detokenize,
        skip: &'d SkipSpecial<'d>,
    ) -> &'d dyn Detokenize {
        if self.show_special {
            detokenizer
        } else {
            skip
        }
    }
}

/// The output side of one sequence (see the [module](self) docs).
pub struct Emitter<'f> {
    prompt_len: usize,
    history: Vec<u32>,
    decoder: IncrementalDecoder,
    /// Text decoded but not emitted: the end of the text that may still become a stop string.
    pending: String,
    /// The stop strings' automaton after the text so far (kept in step with `pending`).
    scan: StopScan,
    emitted: String,
    on_text: &'f mut dyn FnMut(&str),
}

impl std::fmt::Debug for Emitter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emitter")
            .field("prompt_len", &self.prompt_len)
            .field("history", &self.history)
            .field("emitted", &self.emitted)
            .finish_non_exhaustive()
    }
}

impl<'f> Emitter<'f> {
    /// An emitter after `prompt`, streaming text through `on_text`.
    ///
    /// # Errors
    /// What `detokenizer` returns.
    pub fn new(
        detokenizer: &dyn Detokenize,
        prompt: &[u32],
        on_text: &'f mut dyn FnMut(&str),
    ) -> Result<Self> {
        Ok(Emitter {
            prompt_len: prompt.len(),
            history: prompt.to_vec(),
            decoder: IncrementalDecoder::new(detokenizer, prompt)?,
            pending: String::new(),
            scan: StopScan::default(),
            emitted: String::new(),
            on_text,
        })
    }

    /// The prompt and every token pushed so far.
    pub fn history(&self) -> &[u32] {
        &self.history
    }

    /// The tokens pushed so far.
    pub fn generated(&self) -> &[u32] {
        &self.history[self.prompt_len..]
    }

    /// The prompt's length.
    pub fn prompt_len(&self) -> usize {
        self.prompt_len
    }

    /// The text streamed so far.
    pub fn text(&self) -> &str {
        &self.emitted
    }

    /// Records the chosen `token` and streams what of its text is certain. Returns why the
    /// sequence ends with it, if it does: [`FinishReason::Eos`], [`FinishReason::Stop`], or
    /// [`FinishReason::Length`] at `rules.max_tokens` or a full context.
    ///
    /// # Errors
    /// What the detokenizer returns.
    pub fn push(
        &mut self,
        detokenizer: &dyn Detokenize,
        token: u32,
        rules: &EndRules,
    ) -> Result<Option<FinishReason>> {
        self.history.push(token);
        if rules.eos.contains(&token) {
            return Ok(Some(FinishReason::Eos));
        }
        let skip = SkipSpecial(detokenizer);
        let delta = self
            .decoder
            .step(rules.writer(detokenizer, &skip), &self.history)?;
        if self.push_text(&delta, &rules.stops) {
            return Ok(Some(FinishReason::Stop));
        }
        let generated = self.history.len() - self.prompt_len;
        if generated >= rules.max_tokens || self.history.len() >= rules.context {
            return Ok(Some(FinishReason::Length));
        }
        Ok(None)
    }

    /// Ends the sequence for `finish`: decodes what the incremental decoder held back and
    /// emits everything still pending (unless a stop string completes in it, which turns the
    /// reason into [`FinishReason::Stop`]). Returns the text emitted, the generated tokens
    /// (the EOS or stop-completing token included) and the final reason.
    ///
    /// # Errors
    /// What the detokenizer returns.
    pub fn finish(
        mut self,
        detokenizer: &dyn Detokenize,
        finish: FinishReason,
        rules: &EndRules,
    ) -> Result<(String, Vec<u32>, FinishReason)> {
        let mut finish = finish;
        if finish != FinishReason::Stop {
            let end = if finish == FinishReason::Eos {
                self.history.len() - 1
            } else {
                self.history.len()
            };
            let skip = SkipSpecial(detokenizer);
            let writer = rules.writer(detokenizer, &skip);
            let rest = self.decoder.flush(writer, &self.history[..end])?;
            if self.push_text(&rest, &rules.stops) {
                finish = FinishReason::Stop;
            } else {
                let rest = std::mem::take(&mut self.pending);
                self.emit(&rest);
            }
        }
        let tokens = self.history.split_off(self.prompt_len);
        Ok((self.emitted, tokens, finish))
    }

    fn emit(&mut self, text: &str) {
        if !text.is_empty() {
            (self.on_text)(text);
            self.emitted.push_str(text);
        }
    }

    /// Adds `delta`; emits what can no longer be part of a stop string. Returns `true` when a
    /// stop string is complete (the text before it is emitted, the rest dropped).
    ///
    /// Only `delta` is scanned (the automaton state carries the text before it), and what is
    /// pending is exactly what the scan held back, so a stop string that ends in `delta`
    /// starts within `pending + delta`.
    fn push_text(&mut self, delta: &str, stops: &StopStrings) -> bool {
        let before = self.pending.len();
        self.pending.push_str(delta);
        match stops.scan(&mut self.scan, delta) {
            Scanned::Stop { end, len, .. } => {
                let start = before + end - len;
                self.pending.truncate(start);
                let out = std::mem::take(&mut self.pending);
                self.emit(&out);
                true
            }
            Scanned::Partial { held } => {
                let ready = self.pending.len() - held;
                let out: String = self.pending.drain(..ready).collect();
                self.emit(&out);
                false
            }
        }
    }
}
