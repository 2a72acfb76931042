//! The checks both endpoints share — the model named, the prompts (inside the vocabulary and
//! the context; a text too long refused before it is encoded), `n`, the token budget, stop
//! strings, log-probabilities, the response's size — and the [`Prepared`] request they make.

use sieve_core::Pipeline;
use sieve_engine::scheduler::{LogprobMode, LogprobsSpec};
use sieve_engine::StopStrings;

use super::pipelines::pipelines;
use crate::openai::fields::{OutputFields, SamplingFields};
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
    let seed = output
        .seed
        .unwrap_or_else(sieve_text::sampling::random_seed);
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
        .map(<[u8]>::len)
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
/// context (the engine's one prompt check, [`sieve_engine::check_prompt`]) and inside the
/// vocabulary.
fn check_prompt(
    state: &AppState,
    prompt: &[u32],
    param: PromptParam,
    index: Option<usize>,
) -> Result<()> {
    let model = &state.model;
    let which = index.map_or(String::new(), |i| format!("prompt {i}: "));
    if let Err(e) = sieve_engine::check_prompt(prompt, 0, model.context) {
        return Err(match e {
            sieve_engine::Error::ContextOverflow { tokens, context } => Error::PromptTooLong {
                tokens,
                context,
                param,
            },
            e => Error::field(param, format!("{which}{e}")),
        });
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
