//! The generation loop: prefill, then sample / accept / stop-check / stream, one token at a
//! time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sieve_core::{Pipeline, Vocab};

use crate::emit::EndRules;
use crate::model::{Detokenize, LanguageModel};
use crate::stats::{FinishReason, GenerationStats};
use crate::step::{check_prompt, Decoder};
use crate::step_stats::StepStats;
use crate::stop::StopStrings;
#[cfg(doc)]
use crate::Error;
use crate::Result;
#[cfg(doc)]
use sieve_core::{Candidates, Context};

/// What to generate besides the prompt.
///
/// The default generates until an EOS id, a stop string or the end of the context
/// (`max_tokens = usize::MAX`), with no EOS id, no stop string, no vocabulary, and the prompt
/// accepted by the pipeline.
#[derive(Debug, Clone)]
pub struct GenerateOptions<'a> {
    /// The most tokens to generate (an EOS token counts). 0 generates nothing.
    pub max_tokens: usize,
    /// Stop strings (see [`crate::StopStrings`] for the matching rules).
    pub stop: Vec<String>,
    /// End-of-sequence ids: choosing one ends the generation (its text is not emitted).
    pub eos: Vec<u32>,
    /// The vocabulary, passed to the stages in their [`Context`].
    pub vocab: Option<&'a Vocab>,
    /// Whether every prompt token is passed to [`Pipeline::accept`] before the first step,
    /// as llama.cpp does, so that stateful stages (penalties with their own window, DRY)
    /// count the prompt. Stages also see the prompt in [`Context::history`] either way.
    pub accept_prompt: bool,
    /// Whether to record [`StepStats`] for every generated token in
    /// [`Generation::steps`] (two extra passes over each step's logits).
    pub step_stats: bool,
    /// When set (by a Ctrl-C handler, or by the caller when its output has gone), the loop
    /// stops before the next token and returns what it generated with
    /// [`FinishReason::Cancelled`]. Checked between tokens, never inside a forward pass.
    pub cancel: Option<&'a AtomicBool>,
    /// Whether special tokens are written into the text (see [`EndRules::show_special`]).
    pub show_special: bool,
}

impl Default for GenerateOptions<'_> {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: usize::MAX,
            stop: Vec::new(),
            eos: Vec::new(),
            vocab: None,
            accept_prompt: true,
            step_stats: false,
            cancel: None,
            show_special: false,
        }
    }
}

impl GenerateOptions<'_> {
    /// The rules that end a sequence under these options in a model of `context` tokens.
    ///
    /// # Errors
    /// [`Error::EmptyStop`].
    pub fn end_rules(&self, context: usize) -> Result<EndRules> {
        Ok(EndRules {
            max_tokens: self.max_tokens,
            context,
            eos: self.eos.clone(),
            stops: StopStrings::new(&self.stop)?,
            show_special: self.show_special,
        })
    }
}

/// The result of [`generate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The text emitted through the callback, concatenated.
    pub text: String,
    /// The generated token ids (the EOS or stop-completing token included).
    pub tokens: Vec<u32>,
    /// Why it stopped.
    pub finish: FinishReason,
    /// Timings.
    pub stats: GenerationStats,
    /// One entry per generated token when [`GenerateOptions::step_stats`] is set, else empty.
    pub steps: Vec<StepStats>,
}

/// Generates text after `prompt`.
///
/// Steps:
/// 1. `model` is reset and `pipeline` is reset (random stages restart from their seeds);
///    the prompt goes into the history, and into [`Pipeline::accept`] token by token when
///    [`GenerateOptions::accept_prompt`] is set.
/// 2. Prefill: the whole prompt in one [`LanguageModel::forward`] call.
/// 3. Each step ([`Decoder`], the [step](crate::step) every mode shares) loads the logits
///    into [`Candidates`], runs the pipeline with a [`Context`] (history, prompt length,
///    vocabulary, step index), passes the chosen token to [`Pipeline::accept`] and appends
///    it to the history.
/// 4. The token ends the generation if it is an EOS id ([`FinishReason::Eos`]); otherwise its
///    text is decoded incrementally (complete UTF-8 only), searched for stop strings
///    ([`FinishReason::Stop`]), and streamed through `on_text` except the longest ending that
///    may still become a stop string. After `max_tokens` tokens, or when the context is
///    full, it ends with [`FinishReason::Length`].
/// 5. Anything held back is emitted at the end (unless a stop string cut it).
///
/// # Errors
/// [`Error::EmptyPrompt`], [`Error::ContextOverflow`] (the prompt does not fit),
/// [`Error::EmptyStop`], [`Error::LogitsLength`], [`Error::Sampling`] (a stage failed), and
/// and what `model` ([`Error::Model`]) or `detokenizer` ([`Error::Detokenize`]) return.
pub fn generate(
    model: &mut dyn LanguageModel,
    detokenizer: &dyn Detokenize,
    pipeline: &mut Pipeline,
    prompt: &[u32],
    options: &GenerateOptions<'_>,
    on_text: &mut dyn FnMut(&str),
) -> Result<Generation> {
    let start = Instant::now();
    let context = model.context_len();
    check_prompt(prompt, 0, context)?;
    let rules = options.end_rules(context)?;
    model.reset();
    pipeline.reset();
    if options.accept_prompt {
        for &t in prompt {
            pipeline.accept(t);
        }
    }
    let mut stats = GenerationStats {
        prompt_tokens: prompt.len(),
        ..Default::default()
    };
    if options.max_tokens == 0 {
        stats.total_time = start.elapsed();
        return Ok(Generation {
            text: String::new(),
            tokens: Vec::new(),
            finish: FinishReason::Length,
            stats,
            steps: Vec::new(),
        });
    }
    let mut out = Decoder::new(detokenizer, prompt, model.vocab_size(), on_text)?;

    let planned = model.position() + prompt.len();
    model.reserve(planned.saturating_add(options.max_tokens));
    let t = Instant::now();
    let mut logits = model.forward(prompt)?;
    stats.prefill_time = t.elapsed();

    let mut steps = Vec::new();
    let mut first_at: Option<Instant> = None;
    let mut sampling = Duration::ZERO;
    let mut forward = Duration::ZERO;
    let finish = loop {
        if options
            .cancel
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
        {
            break FinishReason::Cancelled;
        }
        let t = Instant::now();
        let sampled = out.sample(
            pipeline,
            std::mem::take(&mut logits),
            options.vocab,
            options.step_stats,
        )?;
        let token = sampled.token;
        sampling += t.elapsed();
        if let Some(raw) = sampled.raw {
            steps.push(StepStats::of(&raw, token, out.candidates()));
        }
        let now = Instant::now();
        let first = *first_at.get_or_insert_with(|| {
            stats.time_to_first_token = now - start;
            now
        });
        stats.decode_time = now - first;

        if let Some(finish) = out.emit(detokenizer, token, &rules)? {
            break finish;
        }
        let t = Instant::now();
        logits = model.forward(&[token])?;
        forward += t.elapsed();
    };

    let (text, tokens, finish) = out.finish(detokenizer, finish, &rules)?;
    stats.generated_tokens = tokens.len();
    stats.sampling_time = sampling;
    stats.decode_forward_time = forward;
    stats.total_time = start.elapsed();
    Ok(Generation {
        text,
        tokens,
        finish,
        stats,
        steps,
    })
}
