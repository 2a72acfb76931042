//! A prepared request handed to the scheduler ([`submit`]), and the bookkeeping of its events:
//! the metrics, the request log's token counts, and a cancellation counted when its client
//! goes away.

use std::time::Instant;

use sieve_engine::scheduler::{Event, EventSink, Request};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use super::prepare::Prepared;
use crate::log::TokenCounts;
use crate::metrics::Endpoint;
use crate::openai::common::{response_id, unix_now, Envelope, Usage};
use crate::state::AppState;
use crate::Result;

/// The scheduler's events for one prompt into the response's tokio channel, its choices
/// numbered after those of the prompts before it (`first_choice` on).
struct TokioSink {
    sender: UnboundedSender<Event>,
    first_choice: usize,
}

impl EventSink for TokioSink {
    fn send(&mut self, mut event: Event) -> bool {
        match &mut event {
            Event::Token { choice, .. } | Event::Finished { choice, .. } => {
                *choice += self.first_choice;
            }
            Event::Failed { .. } => {}
        }
        self.sender.send(event).is_ok()
    }

    fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }
}

/// What a response repeats about its request.
#[derive(Debug, Clone)]
pub struct Meta {
    /// `cmpl-…` / `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model served.
    pub model: String,
    /// The canonical pipeline.
    pub sampler: String,
    /// The seed.
    pub seed: u64,
    /// Choices, over all prompts (prompt `i`'s choice `j` is choice `i·n + j`).
    pub n: usize,
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// A usage chunk at the end of a stream.
    pub include_usage: bool,
}

impl Submitted {
    /// The request's next event, seen by its bookkeeping first; `None` when the scheduler
    /// stopped.
    pub(super) async fn next_event(&mut self) -> Option<Event> {
        let event = self.events.recv().await?;
        self.progress.see(&event);
        Some(event)
    }
}

impl Meta {
    /// The envelope of a whole response of `object` around `choices`: usage, pipeline and
    /// seed included.
    pub fn whole<C>(&self, object: &'static str, choices: Vec<C>, usage: Usage) -> Envelope<C> {
        Envelope {
            usage: Some(usage),
            sampler: Some(self.sampler.clone()),
            seed: Some(self.seed),
            ..self.chunk(object, choices, None, false)
        }
    }

    /// The envelope of a stream chunk of `object`; `first`: the stream's first chunk, which
    /// names the pipeline and the seed.
    pub fn chunk<C>(
        &self,
        object: &'static str,
        choices: Vec<C>,
        usage: Option<Usage>,
        first: bool,
    ) -> Envelope<C> {
        Envelope {
            id: self.id.clone(),
            object,
            created: self.created,
            model: self.model.clone(),
            choices,
            usage,
            sampler: first.then(|| self.sampler.clone()),
            seed: first.then_some(self.seed),
        }
    }
}

/// A request handed to the scheduler: its events and the bookkeeping of its metrics.
pub struct Submitted {
    /// What the response repeats.
    pub meta: Meta,
    // Dropped before `events`, so a cancellation is counted before the scheduler can see it.
    pub(super) progress: Progress,
    events: UnboundedReceiver<Event>,
}

/// Hands `prepared` to the scheduler: one scheduler request per prompt, their events into
/// one channel with the choices numbered in prompt order (OpenAI's `index`).
///
/// # Errors
/// 503 when the queue is full (or the scheduler stopped), 400 for what the scheduler
/// refuses; the prompts already queued are then cancelled with the response.
pub fn submit(
    state: &AppState,
    prepared: Prepared,
    endpoint: Endpoint,
    id_prefix: &str,
    counts: Option<TokenCounts>,
) -> Result<Submitted> {
    let (sender, events) = unbounded_channel();
    let meta = Meta {
        id: response_id(id_prefix),
        created: unix_now(),
        model: state.model.name.clone(),
        sampler: prepared.sampler,
        seed: prepared.seed,
        n: prepared.n * prepared.prompts.len(),
        prompt_tokens: prepared.prompts.iter().map(Vec::len).sum(),
        include_usage: prepared.include_usage,
    };
    let n = meta.n;
    for (i, (prompt, pipelines)) in prepared
        .prompts
        .into_iter()
        .zip(prepared.pipelines)
        .enumerate()
    {
        state.scheduler.submit(Request {
            prompt,
            pipelines,
            max_tokens: prepared.max_tokens,
            stop: prepared.stop.clone(),
            eos: prepared.eos.clone(),
            logprobs: prepared.logprobs,
            show_special: prepared.show_special,
            sink: Box::new(TokioSink {
                sender: sender.clone(),
                first_choice: i * prepared.n,
            }),
        })?;
    }
    state.metrics.request(endpoint, meta.prompt_tokens);
    let meta_prompt_tokens = meta.prompt_tokens;
    Ok(Submitted {
        meta,
        events,
        progress: Progress::new(state.clone(), n, counts, meta_prompt_tokens),
    })
}

/// Timing and counting of one request's events; counts the request as cancelled when it
/// is dropped unfinished (its client went away).
pub(super) struct Progress {
    state: AppState,
    started: Instant,
    first_token: bool,
    /// Per choice: when its first token came, and how many came.
    choices: Vec<(Option<Instant>, usize)>,
    finished: usize,
    failed: bool,
    /// The request's log line's token counts.
    counts: Option<TokenCounts>,
}

impl Progress {
    fn new(state: AppState, n: usize, counts: Option<TokenCounts>, prompt_tokens: usize) -> Self {
        if let Some(c) = &counts {
            c.record(prompt_tokens, 0);
        }
        Progress {
            state,
            started: Instant::now(),
            first_token: false,
            choices: vec![(None, 0); n],
            finished: 0,
            failed: false,
            counts,
        }
    }

    pub(super) fn done(&self) -> bool {
        self.failed || self.finished == self.choices.len()
    }

    pub(super) fn see(&mut self, event: &Event) {
        let metrics = &self.state.metrics;
        match event {
            Event::Token { choice, .. } => {
                let now = Instant::now();
                metrics.token();
                if let Some(c) = &self.counts {
                    c.record(0, 1);
                }
                if !self.first_token {
                    self.first_token = true;
                    metrics.time_to_first_token(now - self.started);
                }
                if let Some((first, count)) = self.choices.get_mut(*choice) {
                    first.get_or_insert(now);
                    *count += 1;
                }
            }
            Event::Finished { choice, .. } => {
                self.finished += 1;
                if let Some(&(Some(first), count)) = self.choices.get(*choice) {
                    if count > 1 {
                        metrics.time_per_output_token(first.elapsed() / (count as u32 - 1));
                    }
                }
            }
            Event::Failed { .. } => {
                self.failed = true;
                metrics.failed();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if !self.done() {
            self.state.metrics.cancelled();
        }
    }
}
