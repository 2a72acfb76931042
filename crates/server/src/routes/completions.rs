//! `POST /v1/completions`: a text (or token-id) prompt, encoded as `sieve generate` encodes
//! it (with the tokenizer's special tokens, e.g. BOS); the whole completion or a stream.

use std::cell::Cell;
use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use sieve_engine::scheduler::TokenLogprobs;
use sieve_engine::FinishReason;

use super::tokens::token_text;
use crate::body::JsonBody;
use crate::generation::{
    self, check_prompt_text, collect, prepare, submit, Chunks, Meta, Prepared,
};
use crate::log::TokenCounts;
use crate::metrics::Endpoint;
use crate::openai::common::{finish_reason, finite, Usage};
use crate::openai::completions::{
    Completion, CompletionChoice, CompletionFields, CompletionLogprobs, Prompt,
};
use crate::openai::fields::OutputFields;
use crate::state::AppState;
use crate::{Error, Result};

/// The object a completion and each of its chunks are.
const OBJECT: &str = "text_completion";

/// `POST /v1/completions`.
///
/// # Errors
/// See [`prepare`] and [`submit`]; 400 for `echo`, `suffix`, `best_of` > 1 (not supported).
pub async fn completions(
    State(state): State<AppState>,
    counts: Option<Extension<TokenCounts>>,
    body: JsonBody,
) -> Result<Response> {
    let job = state.clone();
    let (prepared, logprobs) = state.work.run(move || prepare_request(&job, &body)).await?;
    let stream = prepared.stream;
    let counts = counts.map(|Extension(c)| c);
    let submitted = submit(&state, prepared, Endpoint::Completions, "cmpl", counts)?;
    let chunks = CompletionChunks {
        state: state.clone(),
        logprobs,
        named: Cell::new(false),
    };
    if stream {
        return Ok(generation::stream(submitted, chunks).into_response());
    }
    let (meta, outputs) = collect(submitted).await?;
    let usage = Usage::new(
        meta.prompt_tokens,
        outputs.iter().map(|c| c.tokens.len()).sum(),
    );
    let choices = outputs
        .into_iter()
        .enumerate()
        .map(|(index, c)| CompletionChoice {
            index,
            logprobs: chunks.logprobs.then(|| {
                let mut lp = CompletionLogprobs::default();
                for ((&token, l), &offset) in c.tokens.iter().zip(&c.logprobs).zip(&c.offsets) {
                    chunks.push(&mut lp, token, l, offset);
                }
                lp
            }),
            text: c.text,
            finish_reason: Some(finish_reason(c.finish.unwrap_or(FinishReason::Length))),
        })
        .collect();
    let whole: Completion = meta.whole(OBJECT, choices, usage);
    Ok(Json(whole).into_response())
}

/// The request read, its prompts encoded and its pipelines built (on the work pool), and
/// whether it asks for log-probabilities.
fn prepare_request(state: &AppState, body: &JsonBody) -> Result<(Prepared, bool)> {
    let output: OutputFields = body.fields()?;
    let sampling = body.sampling()?;
    let own: CompletionFields = body.fields()?;
    if own.echo == Some(true) {
        return Err(Error::field("echo", "`echo` is not supported"));
    }
    if own.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(Error::field("suffix", "`suffix` is not supported"));
    }
    if own.best_of.is_some_and(|b| b > 1) {
        return Err(Error::field(
            "best_of",
            "`best_of` is not supported; use `n`",
        ));
    }
    let prompts = prompt_tokens(state, own.prompt)?;
    let logprobs = own.logprobs.map(|k| ("logprobs", k));
    let prepared = prepare(state, &output, &sampling, prompts, "prompt", logprobs)?;
    Ok((prepared, own.logprobs.is_some()))
}

/// Each prompt's ids: text encoded with the special tokens, ids as given. A list gives
/// several prompts (choices numbered prompt by prompt, as OpenAI does).
fn prompt_tokens(state: &AppState, prompt: Option<Prompt>) -> Result<Vec<Vec<u32>>> {
    let encode = |text: &str| {
        check_prompt_text(state, text, "prompt")?;
        state
            .model
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::field("prompt", e.to_string()))
    };
    match prompt {
        None => Err(Error::field("prompt", "`prompt` is required")),
        Some(Prompt::Text(text)) => Ok(vec![encode(&text)?]),
        Some(Prompt::Tokens(ids)) => Ok(vec![ids]),
        Some(Prompt::Texts(texts)) => texts.iter().map(|t| encode(t)).collect(),
        Some(Prompt::TokenLists(lists)) => Ok(lists),
    }
}

/// Completion chunks (the same object as a whole completion, one choice at a time).
struct CompletionChunks {
    state: AppState,
    logprobs: bool,
    /// Whether a chunk carried the pipeline and seed already.
    named: Cell<bool>,
}

impl CompletionChunks {
    fn push(&self, lp: &mut CompletionLogprobs, token: u32, l: &TokenLogprobs, offset: usize) {
        let tokenizer = &self.state.model.tokenizer;
        lp.tokens.push(token_text(tokenizer, token).0);
        lp.token_logprobs.push(finite(l.logprob));
        let top: BTreeMap<String, f32> = l
            .top
            .iter()
            .map(|&(id, x)| (token_text(tokenizer, id).0, finite(x)))
            .collect();
        lp.top_logprobs.push(top);
        lp.text_offset.push(offset);
    }

    fn chunk(&self, meta: &Meta, choices: Vec<CompletionChoice>, usage: Option<Usage>) -> String {
        let first = !self.named.replace(true);
        let chunk: Completion = meta.chunk(OBJECT, choices, usage, first);
        serde_json::to_string(&chunk).unwrap_or_default()
    }
}

impl Chunks for CompletionChunks {
    fn opening(&self, _: &Meta) -> Vec<String> {
        Vec::new()
    }

    fn text(
        &mut self,
        meta: &Meta,
        choice: usize,
        text: &str,
        token: Option<(u32, &TokenLogprobs)>,
        offset: usize,
    ) -> Vec<String> {
        let logprobs = token.filter(|_| self.logprobs).map(|(id, l)| {
            let mut lp = CompletionLogprobs::default();
            self.push(&mut lp, id, l, offset);
            lp
        });
        let choice = CompletionChoice {
            index: choice,
            text: text.to_string(),
            logprobs,
            finish_reason: None,
        };
        vec![self.chunk(meta, vec![choice], None)]
    }

    fn finish(&mut self, meta: &Meta, choice: usize, reason: FinishReason) -> Vec<String> {
        let choice = CompletionChoice {
            index: choice,
            text: String::new(),
            logprobs: None,
            finish_reason: Some(finish_reason(reason)),
        };
        vec![self.chunk(meta, vec![choice], None)]
    }

    fn usage(&self, meta: &Meta, usage: Usage) -> String {
        self.chunk(meta, Vec::new(), Some(usage))
    }
}
