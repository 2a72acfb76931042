//! From validated request fields to events and back: [`prepare`] checks the fields both
//! endpoints share and builds one pipeline per choice, [`submit`] hands the request to the
//! scheduler, and [`collect`] (a whole response) or [`stream()`] (server-sent events) turn the
//! scheduler's events into output, keeping the metrics.

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hasher};
use std::time::Instant;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use sieve_core::{BuildContext, Pipeline};
use sieve_dsl::PipelineSpec;
use sieve_engine::serve::{
    Event, EventSink, FailureCause, LogprobMode, LogprobsSpec, Request, TokenLogprobs,
};
use sieve_engine::{FinishReason, StopStrings};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::log::TokenCounts;
use crate::metrics::Endpoint;
use crate::openai::common::{response_id, unix_now, Usage};
use crate::openai::fields::{OutputFields, SamplingFields};
use crate::sampling::{pipeline_text, sets_any};
use crate::state::{AppState, MAX_TOP_LOGPROBS};
use crate::{Error, Result};

/// A request ready for the scheduler, and what its response repeats.
pub struct Prepared {
    /// Each prompt's ids (completions take a list; chat has one).
    pub prompts: Vec<Vec<u32>>,
    /// Per prompt, one pipeline per choice (choice `j` of every prompt built with seed
    /// `seed + j`, as a request with that prompt alone would be).
    pub pipelines: Vec<Vec<Pipeline>>,
    /// Choices per prompt.
    pub n: usize,
    /// The canonical pipeline.
    pub sampler: String,
    /// The seed.
    pub seed: u64,
    /// Tokens per choice.
    pub max_tokens: usize,
    /// Stop strings.
    pub stop: StopStrings,
    /// End-of-sequence ids (none with `ignore_eos`).
    pub eos: Vec<u32>,
    /// Log-probabilities asked for.
    pub logprobs: Option<LogprobsSpec>,
    /// Special tokens written into the text (`skip_special_tokens: false`).
    pub show_special: bool,
    /// Server-sent events.
    pub stream: bool,
    /// A usage chunk at the end of the stream.
    pub include_usage: bool,
}

/// Where the prompt came from, for error messages: `prompt` or `messages`.
pub type PromptParam = &'static str;

/// Checks the shared fields and builds the pipelines. `top_logprobs` is `Some((param, k))`
/// when the request asks for log-probabilities with `k` alternatives.
///
/// # Errors
/// 404 for another model; 400 for a bad field, a `sampler` that does not compile (with its
/// caret diagnostic), no prompt, an empty prompt, ids beyond the vocabulary, a prompt longer
/// than the context, more prompts than the queue holds.
pub fn prepare(
    state: &AppState,
    output: &OutputFields,
    sampling: &SamplingFields,
    prompts: Vec<Vec<u32>>,
    prompt_param: PromptParam,
    top_logprobs: Option<(&'static str, u32)>,
) -> Result<Prepared> {
    check_model(state, output.model.as_deref())?;
    let max_queue = state.scheduler.config().max_queue;
    if prompts.is_empty() || prompts.len() > max_queue {
        return Err(Error::field(
            prompt_param,
            format!(
                "{} prompts given; this server takes 1 to {max_queue} per request",
                prompts.len()
            ),
        ));
    }
    for (i, prompt) in prompts.iter().enumerate() {
        check_prompt(
            state,
            prompt,
            prompt_param,
            (prompts.len() > 1).then_some(i),
        )?;
    }
    let parallel = state.scheduler.config().parallel;
    let n = output.n.unwrap_or(1);
    if n == 0 || n > parallel as u64 {
        return Err(Error::field(
            "n",
            format!("{n}: this server runs between 1 and {parallel} choices per request"),
        ));
    }
    let max_tokens = match output.max_completion_tokens.or(output.max_tokens) {
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
        None => state
            .defaults
            .generation
            .max_new_tokens
            .map_or(state.settings.default_max_tokens, |m| m as usize),
    };
    let stop_list = output
        .stop
        .clone()
        .map(|s| s.into_vec())
        .unwrap_or_default();
    let stop = StopStrings::new(&stop_list).map_err(|e| Error::field("stop", e.to_string()))?;
    let eos = if output.ignore_eos == Some(true) {
        Vec::new()
    } else {
        state.model.eos.clone()
    };
    let logprobs = match top_logprobs {
        None => None,
        Some((param, top)) => {
            if top > MAX_TOP_LOGPROBS {
                return Err(Error::field(
                    param,
                    format!("{top}: at most {MAX_TOP_LOGPROBS} alternatives"),
                ));
            }
            let mode = match output.logprobs_mode.as_deref() {
                None | Some("processed" | "processed_logprobs") => LogprobMode::Processed,
                Some("raw" | "raw_logprobs") => LogprobMode::Raw,
                Some(other) => {
                    return Err(Error::field(
                        "logprobs_mode",
                        format!("`{other}`: give `processed` or `raw`"),
                    ))
                }
            };
            Some(LogprobsSpec {
                top: top as usize,
                mode,
            })
        }
    };
    check_response_size(state, prompts.len() * n as usize, max_tokens, logprobs)?;
    let seed = output.seed.unwrap_or_else(random_seed);
    let (sampler, pipelines) = pipelines(state, sampling, seed, n as usize, prompts.len())?;
    Ok(Prepared {
        prompts,
        pipelines,
        n: n as usize,
        sampler,
        seed,
        max_tokens,
        stop,
        eos,
        logprobs,
        show_special: output.skip_special_tokens == Some(false),
        stream: output.stream == Some(true),
        include_usage: output.stream_options.is_some_and(|o| o.include_usage),
    })
}

/// The most token entries one response may hold: choices × tokens per choice × (1 + the
/// log-probability alternatives asked for per token). About 50 MB of JSON at most, and the
/// same bound for a stream (whose events wait in memory while its client does not read).
pub const MAX_RESPONSE_TOKENS: usize = 1 << 20;

/// 400 when the response asked for could hold more than [`MAX_RESPONSE_TOKENS`] token
/// entries (`choices` choices of at most `max_tokens` tokens each, no more than the context).
fn check_response_size(
    state: &AppState,
    choices: usize,
    max_tokens: usize,
    logprobs: Option<LogprobsSpec>,
) -> Result<()> {
    let per_token = 1 + logprobs.map_or(0, |l| l.top);
    let tokens = max_tokens.min(state.model.context);
    let entries = choices.saturating_mul(tokens).saturating_mul(per_token);
    if entries > MAX_RESPONSE_TOKENS {
        return Err(Error::field(
            "max_tokens",
            format!(
                "{choices} choices × {tokens} tokens × {per_token} entries per token is \
                 {entries} token entries; a response holds at most {MAX_RESPONSE_TOKENS}: ask \
                 for fewer choices, tokens or log-probability alternatives"
            ),
        ));
    }
    Ok(())
}

/// How many times shorter a normalizer may make a text: Unicode composition turns three
/// Hangul jamo (9 bytes) into one syllable (3 bytes).
const NORMALIZED_SHRINK: usize = 4;

/// 400 for a prompt text too long to fit in the context whatever its tokens, refused before
/// it is encoded (encoding megabytes takes seconds and a hundred times their size in memory).
///
/// No token is longer than the vocabulary's longest, so a text of more than `context ×
/// longest` bytes needs more tokens than the context holds; a tokenizer that normalizes text
/// first is allowed 4 times more (Unicode composition can shorten a text 3 times). (An added token that strips the spaces
/// around it could make a longer text fit; such a text is refused all the same.)
///
/// # Errors
/// [`Error::BadRequest`] naming `param`, with the text's length and the most that fits.
pub fn check_prompt_text(state: &AppState, text: &str, param: PromptParam) -> Result<()> {
    let model = &state.model;
    let longest = model
        .vocab
        .tokens()
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(1)
        .max(1);
    let shrink = if model.tokenizer.normalizes() {
        NORMALIZED_SHRINK
    } else {
        1
    };
    let most = model.context.saturating_mul(longest).saturating_mul(shrink);
    if text.len() > most {
        return Err(Error::field(
            param,
            format!(
                "the prompt is {} bytes of text, more than the model's context of {} tokens \
                 can hold (its longest token is {longest} bytes: at most {most} bytes fit)",
                text.len(),
                model.context
            ),
        ));
    }
    Ok(())
}

/// 400 unless `prompt` (the `index`-th of several, when given) is non-empty, inside the
/// vocabulary and the context.
fn check_prompt(
    state: &AppState,
    prompt: &[u32],
    param: PromptParam,
    index: Option<usize>,
) -> Result<()> {
    let model = &state.model;
    let which = index.map_or(String::new(), |i| format!("prompt {i}: "));
    if prompt.is_empty() {
        return Err(Error::field(
            param,
            format!("{which}the prompt has no token"),
        ));
    }
    if let Some(&bad) = prompt.iter().find(|&&t| t as usize >= model.vocab_size) {
        return Err(Error::field(
            param,
            format!(
                "{which}token {bad} is beyond the vocabulary ({} tokens)",
                model.vocab_size
            ),
        ));
    }
    if prompt.len() > model.context {
        return Err(Error::PromptTooLong {
            tokens: prompt.len(),
            context: model.context,
            param,
        });
    }
    Ok(())
}

/// 404 unless `model` is absent or the model served.
///
/// # Errors
/// [`Error::UnknownModel`].
pub fn check_model(state: &AppState, model: Option<&str>) -> Result<()> {
    match model {
        Some(m) if m != state.model.name => Err(Error::UnknownModel(m.to_string())),
        _ => Ok(()),
    }
}

/// The canonical pipeline and, for each of `prompts` prompts, one built copy per choice
/// (choice `j` with seed `seed + j`).
fn pipelines(
    state: &AppState,
    sampling: &SamplingFields,
    seed: u64,
    n: usize,
    prompts: usize,
) -> Result<(String, Vec<Vec<Pipeline>>)> {
    let text = pipeline_text(sampling, &state.defaults, &state.registry)?;
    let vocab = Some(&*state.model.vocab);
    let failed = |d: sieve_dsl::Diagnostic, source: &str| {
        if sampling.sampler.is_some() {
            Error::Sampler(d.render(source))
        } else {
            Error::BadRequest {
                message: format!(
                    "the request's sampling fields make a pipeline that does not build:\n{}",
                    d.render(source)
                ),
                param: None,
            }
        }
    };
    if sets_any(sampling) {
        // Checked on the parsed spec, before any stage is built: a stage never reads a file
        // a request names (whether it exists, or what it holds, would leak into the error).
        let spec = PipelineSpec::parse(&text, &state.registry).map_err(|d| failed(d, &text))?;
        refuse_server_files(&spec)?;
    }
    let compiled = sieve_dsl::compile(&text, &state.registry, &BuildContext { seed, vocab })
        .map_err(|d| failed(d, &text))?;
    let canonical = compiled.spec.to_string();
    let mut first = Some(compiled.pipeline);
    let mut all = Vec::with_capacity(prompts);
    for _ in 0..prompts {
        let mut built = Vec::with_capacity(n);
        for j in 0..n as u64 {
            if let Some(pipeline) = first.take() {
                built.push(pipeline);
                continue;
            }
            let cx = BuildContext {
                seed: seed.wrapping_add(j),
                vocab,
            };
            let pipeline = compiled
                .spec
                .build(&state.registry, &cx)
                .map_err(|d| failed(d, &canonical))?;
            built.push(pipeline);
        }
        all.push(built);
    }
    Ok((canonical, all))
}

/// Refuses a stage argument that reads a file on the server (`file`, as `grammar(file=…)`
/// has), with a 400 naming the stage.
///
/// # Errors
/// [`Error::Sampler`].
pub fn refuse_server_files(spec: &PipelineSpec) -> Result<()> {
    for stage in &spec.stages {
        if stage
            .get("file")
            .is_some_and(|v| !matches!(v, sieve_core::Value::Str(s) if s.is_empty()))
        {
            return Err(Error::Sampler(format!(
                "stage `{}`: `file` reads a file on the server and is not allowed in a request; \
                 pass the grammar or schema inline",
                stage.name
            )));
        }
    }
    Ok(())
}

/// A seed for a request that gives none: from the process's random hasher keys and the
/// time, cut to 53 bits so that every JSON reader gets it exactly.
fn random_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish() >> 11
}

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

/// A request handed to the scheduler: its events and the bookkeeping of its metrics.
pub struct Submitted {
    /// What the response repeats.
    pub meta: Meta,
    // Dropped before `events`, so a cancellation is counted before the scheduler can see it.
    progress: Progress,
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
struct Progress {
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

    fn done(&self) -> bool {
        self.failed || self.finished == self.choices.len()
    }

    fn see(&mut self, event: &Event) {
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
        let Some(event) = submitted.events.recv().await else {
            return Err(Error::Generation("the scheduler stopped".to_string()));
        };
        submitted.progress.see(&event);
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
        let Some(event) = self.submitted.events.recv().await else {
            self.ended = true;
            let e = Error::Generation("the scheduler stopped".to_string());
            return vec![data(&error_json(&e)), done()];
        };
        self.submitted.progress.see(&event);
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
