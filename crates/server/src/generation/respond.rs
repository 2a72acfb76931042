//! The scheduler's events turned into output: a whole response ([`collect`]) or server-sent
//! events ([`stream()`]), written by each endpoint's [`Chunks`].

use std::convert::Infallible;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use sieve_engine::scheduler::{Event, FailureCause, TokenLogprobs};
use sieve_engine::FinishReason;

use super::submit::{Meta, Submitted};
use crate::openai::common::Usage;
use crate::{Error, Result};

/// One finished choice.
#[derive(Debug, Clone, Default)]
pub struct ChoiceOutput {
    /// Its text.
    pub text: String,
    /// Its tokens (an end-of-sequence token included).
    pub tokens: Vec<u32>,
    /// Each token's log-probabilities, when asked for.
    pub logprobs: Vec<TokenLogprobs>,
    /// Where each token's text starts in `text`.
    pub offsets: Vec<usize>,
    /// Why it ended.
    pub finish: Option<FinishReason>,
}

/// Waits for every choice of `submitted` to finish.
///
/// # Errors
/// 500 when generation fails.
pub async fn collect(mut submitted: Submitted) -> Result<(Meta, Vec<ChoiceOutput>)> {
    let mut out = vec![ChoiceOutput::default(); submitted.meta.n];
    while !submitted.progress.done() {
        let Some(event) = submitted.next_event().await else {
            return Err(Error::Generation("the scheduler stopped".to_string()));
        };
        match event {
            Event::Token {
                choice,
                token,
                text,
                logprobs,
            } => {
                if let Some(c) = out.get_mut(choice) {
                    c.offsets.push(c.text.len());
                    c.text.push_str(&text);
                    c.tokens.push(token);
                    c.logprobs.extend(logprobs);
                }
            }
            Event::Finished {
                choice,
                text,
                reason,
                ..
            } => {
                if let Some(c) = out.get_mut(choice) {
                    c.text.push_str(&text);
                    c.finish = Some(reason);
                }
            }
            Event::Failed { message, cause } => return Err(failure(message, cause)),
        }
    }
    Ok((submitted.meta, out))
}

/// How an endpoint writes its stream chunks (JSON text, fields in OpenAI's order).
pub trait Chunks: Send + 'static {
    /// Chunks before any token (chat: each choice's role).
    fn opening(&self, meta: &Meta) -> Vec<String>;
    /// The chunks carrying `text` (and a token's log-probabilities) for `choice`; `offset` is
    /// where the text starts in the choice's text. None when the text is held back (chat's
    /// tool calls).
    fn text(
        &mut self,
        meta: &Meta,
        choice: usize,
        text: &str,
        token: Option<(u32, &TokenLogprobs)>,
        offset: usize,
    ) -> Vec<String>;
    /// The last chunks of `choice` (what was held back, then its `finish_reason`).
    fn finish(&mut self, meta: &Meta, choice: usize, reason: FinishReason) -> Vec<String>;
    /// The usage chunk.
    fn usage(&self, meta: &Meta, usage: Usage) -> String;
}

/// Streams `submitted` as server-sent events: one `data:` chunk per token with text (or
/// log-probabilities), each choice's last chunk with its `finish_reason`, a usage chunk
/// when asked for, then `data: [DONE]`. A failure mid-stream sends an `{"error": …}` chunk
/// before `[DONE]`. Dropping the stream (the client went away) cancels the request.
pub fn stream<C: Chunks>(
    submitted: Submitted,
    chunks: C,
) -> Sse<impl Stream<Item = std::result::Result<SseEvent, Infallible>>> {
    let opening: Vec<SseEvent> = chunks
        .opening(&submitted.meta)
        .iter()
        .map(|c| data(c))
        .collect();
    let state = StreamState {
        submitted,
        chunks,
        offsets: Vec::new(),
        completion_tokens: 0,
        ended: false,
    };
    let rest = stream::unfold(state, |mut st| async move {
        if st.ended {
            return None;
        }
        let events = st.next().await;
        Some((events, st))
    });
    let all = stream::iter(opening.into_iter().map(Ok))
        .chain(rest.flat_map(|events| stream::iter(events.into_iter().map(Ok))));
    Sse::new(all).keep_alive(KeepAlive::default())
}

struct StreamState<C> {
    submitted: Submitted,
    chunks: C,
    offsets: Vec<usize>,
    completion_tokens: usize,
    ended: bool,
}

impl<C: Chunks> StreamState<C> {
    /// The SSE events of the next scheduler event (the closing ones at the end).
    async fn next(&mut self) -> Vec<SseEvent> {
        let meta = &self.submitted.meta;
        if self.offsets.is_empty() {
            self.offsets = vec![0; meta.n];
        }
        let Some(event) = self.submitted.next_event().await else {
            self.ended = true;
            let e = Error::Generation("the scheduler stopped".to_string());
            return vec![data(&error_json(&e)), done()];
        };
        let meta = &self.submitted.meta;
        let mut out = Vec::new();
        match event {
            Event::Token {
                choice,
                token,
                text,
                logprobs,
            } => {
                self.completion_tokens += 1;
                if !text.is_empty() || logprobs.is_some() {
                    let offset = self.offsets.get(choice).copied().unwrap_or(0);
                    let lp = logprobs.as_ref().map(|lp| (token, lp));
                    let chunks = self.chunks.text(meta, choice, &text, lp, offset);
                    out.extend(chunks.iter().map(|c| data(c)));
                }
                if let Some(o) = self.offsets.get_mut(choice) {
                    *o += text.len();
                }
            }
            Event::Finished {
                choice,
                text,
                reason,
                ..
            } => {
                if !text.is_empty() {
                    let offset = self.offsets.get(choice).copied().unwrap_or(0);
                    let chunks = self.chunks.text(meta, choice, &text, None, offset);
                    out.extend(chunks.iter().map(|c| data(c)));
                }
                let chunks = self.chunks.finish(meta, choice, reason);
                out.extend(chunks.iter().map(|c| data(c)));
            }
            Event::Failed { message, cause } => {
                let e = failure(message, cause);
                out.push(data(&error_json(&e)));
                out.push(done());
                self.ended = true;
                return out;
            }
        }
        if self.submitted.progress.done() {
            if meta.include_usage {
                let usage = Usage::new(meta.prompt_tokens, self.completion_tokens);
                out.push(data(&self.chunks.usage(meta, usage)));
            }
            out.push(done());
            self.ended = true;
        }
        out
    }
}

/// The error of a failed request: the client's (400) when its pipeline or prompt failed,
/// the server's (500) otherwise.
fn failure(message: String, cause: FailureCause) -> Error {
    match cause {
        FailureCause::Request => Error::SamplingFailed(message),
        FailureCause::Server => Error::Generation(message),
    }
}

fn data(json: &str) -> SseEvent {
    SseEvent::default().data(json)
}

fn error_json(e: &Error) -> String {
    serde_json::to_string(&e.body()).unwrap_or_default()
}

fn done() -> SseEvent {
    SseEvent::default().data("[DONE]")
}
