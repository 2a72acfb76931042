//! The scheduler's loop, on its own thread with the model: receive requests, drop those
//! whose client has gone, admit waiting requests while there is room, then run one step over
//! every decoding choice and the next prompt chunks, and hand each choice its logits.

use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};

use sieve_core::{Pipeline, Vocab};

use super::choice::Choice;
use super::request::{Event, EventSink, FailureCause, LogprobsSpec, Request};
use super::shared::{Shared, Status};
use crate::batch::{BatchModel, Feed, SeqId};
use crate::emit::EndRules;
use crate::model::Detokenize;
use crate::stats::FinishReason;
use crate::step::check_prompt;
use crate::BoxError;

/// A request admitted into the model: prefilling its prompt, or decoding its choices.
struct Live {
    sink: Box<dyn EventSink>,
    rules: EndRules,
    logprobs: Option<LogprobsSpec>,
    prompt: Vec<u32>,
    /// While the prompt is read: its sequence, the tokens fed, the choices' pipelines.
    prefill: Option<Prefill>,
    /// Choices not yet finished.
    open: usize,
}

struct Prefill {
    seq: SeqId,
    fed: usize,
    pipelines: Vec<Pipeline>,
}

/// Requests to drop after a step, with the failure to send (`None`: the client has gone).
type Doomed = BTreeMap<u64, Option<crate::Error>>;

/// The loop's state.
pub(super) struct Worker<M> {
    model: M,
    detokenizer: Arc<dyn Detokenize + Send + Sync>,
    vocab: Option<Arc<Vocab>>,
    shared: Arc<Shared>,
    receiver: mpsc::Receiver<Request>,
    waiting: VecDeque<(u64, Request)>,
    live: BTreeMap<u64, Live>,
    /// Prefilling requests, in order of admission.
    prefilling: Vec<u64>,
    /// Decoding choices, in order of admission.
    choices: Vec<Choice>,
    next_id: u64,
}

impl<M: BatchModel> Worker<M> {
    /// The thread's body: loads the model, then serves until every handle is gone and no
    /// work is left. A panic stops the worker with a status saying so (its requests' sinks
    /// are dropped, which their receivers see).
    pub fn serve<F>(
        load: F,
        detokenizer: Arc<dyn Detokenize + Send + Sync>,
        vocab: Option<Arc<Vocab>>,
        shared: Arc<Shared>,
        receiver: mpsc::Receiver<Request>,
    ) where
        F: FnOnce() -> Result<M, BoxError>,
    {
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let model = match load() {
                Ok(model) => model,
                Err(e) => return Err(format!("the model did not load: {e}")),
            };
            shared.context.store(model.context_len(), Ordering::Release);
            shared.set_status(Status::Ready);
            let mut worker = Worker {
                model,
                detokenizer,
                vocab,
                shared: Arc::clone(&shared),
                receiver,
                waiting: VecDeque::new(),
                live: BTreeMap::new(),
                prefilling: Vec::new(),
                choices: Vec::new(),
                next_id: 0,
            };
            worker.run();
            Ok(())
        }));
        let why = match outcome {
            Ok(Ok(())) => "the scheduler has stopped".to_string(),
            Ok(Err(why)) => why,
            Err(_) => "the scheduler stopped after an internal error".to_string(),
        };
        shared.running.store(0, Ordering::Release);
        shared.set_status(Status::Stopped(why));
    }

    fn run(&mut self) {
        while self.receive() {
            self.drop_cancelled();
            self.admit();
            if !self.choices.is_empty() || !self.prefilling.is_empty() {
                self.step();
            }
            self.shared.running.store(
                self.choices.len() + self.prefilling.len(),
                Ordering::Release,
            );
        }
    }

    /// Moves submitted requests into the waiting queue, blocking when there is nothing else
    /// to do. `false` when every handle is gone and no work is left.
    fn receive(&mut self) -> bool {
        if self.live.is_empty() && self.waiting.is_empty() {
            match self.receiver.recv() {
                Ok(request) => self.enqueue(request),
                Err(_) => return false,
            }
        }
        while let Ok(request) = self.receiver.try_recv() {
            self.enqueue(request);
        }
        true
    }

    fn enqueue(&mut self, request: Request) {
        self.next_id += 1;
        self.waiting.push_back((self.next_id, request));
    }

    /// Drops the waiting and admitted requests whose client has gone, freeing their
    /// sequences at once.
    fn drop_cancelled(&mut self) {
        let before = self.waiting.len();
        self.waiting.retain(|(_, r)| !r.sink.is_closed());
        let gone = before - self.waiting.len();
        if gone > 0 {
            self.shared.waiting.fetch_sub(gone, Ordering::AcqRel);
        }
        let mut doomed = Doomed::new();
        for (&id, live) in &self.live {
            if live.sink.is_closed() {
                doomed.insert(id, None);
            }
        }
        self.bury(doomed);
    }

    /// Admits waiting requests, first come first served, while their choices fit beside the
    /// running ones.
    fn admit(&mut self) {
        let parallel = self.shared.config.parallel;
        loop {
            let held: usize = self.choices.len()
                + self
                    .prefilling
                    .iter()
                    .map(|id| {
                        self.live[id]
                            .prefill
                            .as_ref()
                            .map_or(0, |p| p.pipelines.len())
                    })
                    .sum::<usize>();
            let Some((_, front)) = self.waiting.front() else {
                return;
            };
            if held > 0 && held + front.pipelines.len() > parallel {
                return;
            }
            let Some((id, request)) = self.waiting.pop_front() else {
                return;
            };
            self.shared.waiting.fetch_sub(1, Ordering::AcqRel);
            self.start(id, request);
        }
    }

    /// Opens a sequence for `request`'s prompt, or answers at once when there is nothing to
    /// generate or the prompt cannot be run.
    fn start(&mut self, id: u64, request: Request) {
        let Request {
            prompt,
            pipelines,
            max_tokens,
            stop,
            eos,
            logprobs,
            show_special,
            mut sink,
        } = request;
        let context = self.model.context_len();
        if let Err(error) = check_prompt(&prompt, 0, context) {
            sink.send(failure(&error));
            return;
        }
        if max_tokens == 0 {
            for choice in 0..pipelines.len() {
                let done = Event::Finished {
                    choice,
                    text: String::new(),
                    reason: FinishReason::Length,
                    tokens: 0,
                };
                if !sink.send(done) {
                    return;
                }
            }
            return;
        }
        let seq = self.model.open();
        let open = pipelines.len();
        self.live.insert(
            id,
            Live {
                sink,
                rules: EndRules {
                    max_tokens,
                    context,
                    eos,
                    stops: stop,
                    show_special,
                },
                logprobs,
                prompt,
                prefill: Some(Prefill {
                    seq,
                    fed: 0,
                    pipelines,
                }),
                open,
            },
        );
        self.prefilling.push(id);
    }

    /// One forward pass: every decoding choice's last token and the next prompt chunks (at
    /// most `prefill_chunk` tokens in all), then sampling.
    fn step(&mut self) {
        let mut budget = self.shared.config.prefill_chunk.max(1);
        let mut chunks: Vec<(u64, usize)> = Vec::new();
        let mut feeds: Vec<Feed<'_>> = self
            .choices
            .iter()
            .map(|c| Feed::last(c.seq, std::slice::from_ref(&c.last)))
            .collect();
        for &id in &self.prefilling {
            if budget == 0 {
                break;
            }
            let live = &self.live[&id];
            let Some(p) = &live.prefill else { continue };
            let take = (live.prompt.len() - p.fed).min(budget);
            budget -= take;
            feeds.push(Feed::last(p.seq, &live.prompt[p.fed..p.fed + take]));
            chunks.push((id, take));
        }
        let results: Vec<Result<Vec<f32>, String>> = match self.model.step(&feeds) {
            Ok(rows) if rows.len() == feeds.len() => rows.into_iter().map(Ok).collect(),
            Ok(rows) => {
                let message = format!(
                    "the model returned {} rows for {} sequences",
                    rows.len(),
                    feeds.len()
                );
                feeds.iter().map(|_| Err(message.clone())).collect()
            }
            // A failed step changes nothing: run each feed alone to find whose it was.
            Err(e) if feeds.len() == 1 => vec![Err(e.to_string())],
            Err(_) => feeds
                .iter()
                .map(|f| match self.model.step(std::slice::from_ref(f)) {
                    Ok(mut rows) => rows.pop().ok_or_else(|| "no logits".to_string()),
                    Err(e) => Err(e.to_string()),
                })
                .collect(),
        };
        drop(feeds);
        let mut results = results.into_iter();
        let mut doomed = Doomed::new();
        let decoding = std::mem::take(&mut self.choices);
        let mut kept = Vec::with_capacity(decoding.len());
        for (choice, result) in decoding.into_iter().zip(results.by_ref()) {
            match result {
                Ok(logits) => {
                    if let Some(c) = self.advance(choice, logits, &mut doomed) {
                        kept.push(c);
                    }
                }
                Err(message) => {
                    doomed
                        .entry(choice.request)
                        .or_insert(Some(crate::Error::Model(message.into())));
                    kept.push(choice);
                }
            }
        }
        for ((id, take), result) in chunks.into_iter().zip(results) {
            match result {
                Ok(logits) => self.fed(id, take, logits, &mut kept, &mut doomed),
                Err(message) => {
                    doomed
                        .entry(id)
                        .or_insert(Some(crate::Error::Model(message.into())));
                }
            }
        }
        self.choices = kept;
        self.bury(doomed);
    }

    /// Records `take` more prompt tokens of request `id`; when the prompt is complete, its
    /// choices start (choice 0 on the prompt's sequence, the others on forks of it) and
    /// sample their first token from `logits`.
    fn fed(
        &mut self,
        id: u64,
        take: usize,
        logits: Vec<f32>,
        kept: &mut Vec<Choice>,
        doomed: &mut Doomed,
    ) {
        let Some(live) = self.live.get_mut(&id) else {
            return;
        };
        let Some(p) = live.prefill.as_mut() else {
            return;
        };
        p.fed += take;
        if p.fed < live.prompt.len() {
            return;
        }
        let Some(p) = live.prefill.take() else {
            return;
        };
        self.prefilling.retain(|&x| x != id);
        let mut started = Vec::with_capacity(p.pipelines.len());
        let vocab_size = self.model.vocab_size();
        for (i, pipeline) in p.pipelines.into_iter().enumerate() {
            let seq = if i == 0 {
                Ok(p.seq)
            } else {
                self.model.fork(p.seq)
            };
            let choice = seq.and_then(|seq| {
                let detokenizer = &*self.detokenizer;
                Choice::new(id, i, seq, pipeline, &live.prompt, detokenizer, vocab_size)
                    .inspect_err(|_| {
                        if seq != p.seq {
                            self.model.close(seq);
                        }
                    })
            });
            match choice {
                Ok(c) => started.push(c),
                Err(e) => {
                    // The prompt's sequence is closed with the request (below or in `bury`).
                    if started.is_empty() {
                        self.model.close(p.seq);
                    }
                    for c in started {
                        self.model.close(c.seq);
                    }
                    doomed.insert(id, Some(e));
                    return;
                }
            }
        }
        let last = started.len().saturating_sub(1);
        let mut logits = Some(logits);
        for (i, c) in started.into_iter().enumerate() {
            let row = if i == last {
                logits.take().unwrap_or_default()
            } else {
                logits.clone().unwrap_or_default()
            };
            if doomed.contains_key(&id) {
                self.model.close(c.seq);
            } else if let Some(c) = self.advance(c, row, doomed) {
                kept.push(c);
            }
        }
    }

    /// Samples `choice`'s next token from `logits` and reports it; returns the choice when it
    /// goes on decoding. A finished choice is closed here; a failed or cancelled one is
    /// returned for [`Worker::bury`] to close with its request.
    fn advance(
        &mut self,
        mut choice: Choice,
        logits: Vec<f32>,
        doomed: &mut Doomed,
    ) -> Option<Choice> {
        if doomed.contains_key(&choice.request) {
            return Some(choice);
        }
        let Some(live) = self.live.get_mut(&choice.request) else {
            self.model.close(choice.seq);
            return None;
        };
        let detokenizer = &*self.detokenizer;
        let stepped = choice.advance(
            logits,
            detokenizer,
            &live.rules,
            self.vocab.as_deref(),
            live.logprobs,
        );
        let (event, finish) = match stepped {
            Ok(x) => x,
            Err(e) => {
                doomed.insert(choice.request, Some(e));
                return Some(choice);
            }
        };
        if !live.sink.send(event) {
            doomed.insert(choice.request, None);
            return Some(choice);
        }
        let Some(reason) = finish else {
            return Some(choice);
        };
        let seq = choice.seq;
        let request = choice.request;
        let done = choice.finish(detokenizer, reason, &live.rules);
        self.model.close(seq);
        match done {
            Ok(event) => {
                if !live.sink.send(event) {
                    doomed.insert(request, None);
                    return None;
                }
                live.open -= 1;
                if live.open == 0 {
                    self.live.remove(&request);
                }
            }
            Err(e) => {
                doomed.insert(request, Some(e));
            }
        }
        None
    }

    /// Removes the `doomed` requests: closes their sequences, and sends each its failure.
    fn bury(&mut self, doomed: Doomed) {
        if doomed.is_empty() {
            return;
        }
        let model = &mut self.model;
        self.choices.retain(|c| {
            let keep = !doomed.contains_key(&c.request);
            if !keep {
                model.close(c.seq);
            }
            keep
        });
        self.prefilling.retain(|id| !doomed.contains_key(id));
        for (id, message) in doomed {
            let Some(mut live) = self.live.remove(&id) else {
                continue;
            };
            if let Some(p) = live.prefill.take() {
                self.model.close(p.seq);
            }
            if let Some(error) = message {
                live.sink.send(failure(&error));
            }
        }
    }
}

/// The event that reports `error` as a request's failure.
fn failure(error: &crate::Error) -> Event {
    Event::Failed {
        message: error.to_string(),
        cause: FailureCause::of(error),
    }
}
