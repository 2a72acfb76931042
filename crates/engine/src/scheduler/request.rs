//! What a client hands the scheduler ([`Request`]) and what comes back ([`Event`], through
//! the request's [`EventSink`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use sieve_core::Pipeline;

use crate::stats::FinishReason;
use crate::stop::StopStrings;

/// One generation request: a prompt and `n` choices, each with its own pipeline.
pub struct Request {
    /// The prompt's token ids (at least one).
    pub prompt: Vec<u32>,
    /// One pipeline per choice, built by the caller (choice `i` with seed `seed + i`, so that
    /// choice `i` is what a plain run with that seed gives). Their number is the request's
    /// `n`.
    pub pipelines: Vec<Pipeline>,
    /// The most tokens each choice generates (an EOS token counts); 0 generates nothing.
    pub max_tokens: usize,
    /// Stop strings.
    pub stop: StopStrings,
    /// End-of-sequence ids (empty: only the limits and stop strings end a choice).
    pub eos: Vec<u32>,
    /// Whether and how log-probabilities are reported with each token.
    pub logprobs: Option<LogprobsSpec>,
    /// Whether special tokens are written into the text (OpenAI-style servers' `skip_special_tokens:
    /// false`); by default they are left out, as `sieve generate` does.
    pub show_special: bool,
    /// Where the events go.
    pub sink: Box<dyn EventSink>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("prompt", &self.prompt)
            .field("n", &self.pipelines.len())
            .field("max_tokens", &self.max_tokens)
            .field("eos", &self.eos)
            .field("logprobs", &self.logprobs)
            .finish_non_exhaustive()
    }
}

/// Which distribution log-probabilities are taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogprobMode {
    /// The distribution the selector drew from: the model's logits after every stage of the
    /// pipeline (penalties, temperature, truncations). Tokens a stage removed have
    /// log-probability `-inf`.
    #[default]
    Processed,
    /// The model's own distribution: the softmax of the raw logits, before any stage.
    Raw,
}

/// What log-probabilities to report with each generated token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogprobsSpec {
    /// How many of the most likely alternatives to list besides the chosen token.
    pub top: usize,
    /// Which distribution.
    pub mode: LogprobMode,
}

/// The log-probabilities of one generated token.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    /// The chosen token's log-probability (natural log; `-inf` when the distribution gives
    /// it none).
    pub logprob: f32,
    /// The most likely tokens with their log-probabilities, most likely first (ties by lower
    /// id); tokens of probability 0 are never listed.
    pub top: Vec<(u32, f32)>,
}

/// What the scheduler reports about a request, in order per choice: [`Event::Token`] for
/// every generated token, then one [`Event::Finished`]; or one [`Event::Failed`] for the
/// whole request, after which nothing more comes.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Choice `choice` generated `token`.
    Token {
        /// The choice (0-based).
        choice: usize,
        /// The token id (an EOS token is reported too, with empty text).
        token: u32,
        /// The text that became certain with this token: possibly empty (an incomplete
        /// UTF-8 character, text held back because it may start a stop string).
        text: String,
        /// Its log-probabilities, when the request asked for them.
        logprobs: Option<TokenLogprobs>,
    },
    /// Choice `choice` ended.
    Finished {
        /// The choice.
        choice: usize,
        /// Text released at the end (what was held back and is not cut by a stop string).
        text: String,
        /// Why it ended.
        reason: FinishReason,
        /// How many tokens it generated (an EOS token counts).
        tokens: usize,
    },
    /// The request failed (a stage or the model failed): no further event follows.
    Failed {
        /// What went wrong.
        message: String,
        /// Whose fault it is.
        cause: FailureCause,
    },
}

/// Whose fault a failed request is, so that a server can answer a client's mistake as one
/// (HTTP 4xx) and its own as its own (5xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCause {
    /// What the request asked for cannot be done: its pipeline failed (a grammar that admits
    /// no token, a `logit_bias` that bans every token, stages that contradict each other), or
    /// its prompt is empty or longer than the context.
    Request,
    /// The model, the detokenizer or the scheduler failed.
    Server,
}

impl FailureCause {
    /// The cause of `error`: the request's for a failed pipeline, an empty prompt or one
    /// longer than the context; the server's otherwise.
    pub fn of(error: &crate::Error) -> Self {
        match error {
            crate::Error::Sampling(_)
            | crate::Error::EmptyPrompt
            | crate::Error::ContextOverflow { .. } => FailureCause::Request,
            _ => FailureCause::Server,
        }
    }
}

/// Where a request's events go. The scheduler calls it on its own thread.
pub trait EventSink: Send {
    /// Delivers `event`. Returns `false` when nobody listens any more: the request is then
    /// cancelled and its sequences freed.
    fn send(&mut self, event: Event) -> bool;

    /// Whether nobody listens any more; checked before every step, so that a request which
    /// has nothing to send yet (waiting, prefilling) is dropped as soon as its client goes.
    fn is_closed(&self) -> bool;
}

/// An [`EventSink`] over a standard channel, closed when the receiver is dropped or when
/// the shared cancel flag is set.
#[derive(Debug, Clone)]
pub struct ChannelSink {
    sender: mpsc::Sender<Event>,
    cancel: Arc<AtomicBool>,
}

impl ChannelSink {
    /// A sink and the receiving end of its channel; setting `cancel` cancels the request.
    pub fn new(cancel: Arc<AtomicBool>) -> (Self, mpsc::Receiver<Event>) {
        let (sender, receiver) = mpsc::channel();
        (ChannelSink { sender, cancel }, receiver)
    }
}

impl EventSink for ChannelSink {
    fn send(&mut self, event: Event) -> bool {
        !self.is_closed() && self.sender.send(event).is_ok()
    }

    fn is_closed(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}
