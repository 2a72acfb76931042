//! One chat: the model, the conversation, the pipeline and seed the next reply uses, and what
//! the last reply left (for `/trace` and `/stats`). Both front ends (the terminal and piped
//! lines) drive it the same way: [`Session::reply`] for a message, [`Session::command`] for a
//! `/` command.
//!
//! Every reply renders the whole conversation through the chat template and generates with
//! the engine's one loop ([`sieve_engine::generate()`]) on the model lent by a
//! [`sieve_engine::Conversation`], which keeps the KV cache between turns: only the part of
//! the prompt that the cache does not already hold is prefilled. The pipeline is built anew
//! for each reply with the session's seed, so a reply is exactly what `sieve generate --chat
//! --messages` gives for the same conversation, pipeline and seed.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sieve_core::{BuildContext, Candidates, Context, Registry};
use sieve_dsl::Parsed;
use sieve_engine::{generate, tokens_per_second, FinishReason, GenerateOptions, Generation};

use super::messages::{self, Conversation};
use super::slash::{Slash, HELP};
use crate::commands::apply::trace::Trace;
use crate::error::Failure;
use crate::model::OpenModel;
use crate::{chat, pipeline};

/// What the last reply was made from and what it did.
struct Last {
    /// Its prompt's tokens.
    prompt: Vec<u32>,
    /// Its pipeline and seed.
    parsed: Parsed,
    seed: u64,
    /// The generation.
    generation: Generation,
    /// How many prompt tokens came from the cache.
    reused: usize,
}

/// What a command asks of the front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Show this text (possibly empty) and go on.
    Say(String),
    /// Show this error and go on.
    Error(String),
    /// Leave.
    Quit,
}

/// One chat.
pub struct Session<'r> {
    registry: &'r Registry,
    open: OpenModel,
    /// The pipeline of the next reply.
    parsed: Parsed,
    /// The seed of the next reply.
    seed: u64,
    /// The most tokens of one reply.
    max_tokens: usize,
    /// The messages so far.
    conversation: Conversation,
    /// The tokens in the model's cache.
    cache: sieve_engine::Conversation,
    last: Option<Last>,
    /// A pause after each piece of streamed text (`SIEVE_CHAT_TOKEN_DELAY_MS`).
    delay: Option<Duration>,
}

/// How a session starts.
pub struct Start<'r> {
    /// The stages a pipeline may name.
    pub registry: &'r Registry,
    /// The model, loaded.
    pub open: OpenModel,
    /// The first pipeline.
    pub parsed: Parsed,
    /// The first seed.
    pub seed: u64,
    /// The most tokens of one reply.
    pub max_tokens: usize,
    /// The conversation to continue (`--load`, `--system`).
    pub conversation: Conversation,
    /// A pause after each piece of streamed text.
    pub delay: Option<Duration>,
}

impl<'r> Session<'r> {
    /// A session ready for its first message.
    pub fn new(start: Start<'r>) -> Self {
        Session {
            registry: start.registry,
            open: start.open,
            parsed: start.parsed,
            seed: start.seed,
            max_tokens: start.max_tokens,
            conversation: start.conversation,
            cache: sieve_engine::Conversation::new(),
            last: None,
            delay: start.delay,
        }
    }

    /// The messages so far.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// The pipeline of the next reply, in canonical form.
    pub fn sampler(&self) -> String {
        self.parsed.spec().to_string()
    }

    /// The seed of the next reply.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether the conversation waits for a reply (its last message is the user's).
    pub fn awaits_reply(&self) -> bool {
        self.conversation
            .turns
            .last()
            .is_some_and(|m| m.role == "user")
    }

    /// Adds `text` as the user's message and replies to it (see [`Session::answer`]).
    ///
    /// # Errors
    /// As [`Session::answer`]; the message is taken back.
    pub fn reply(
        &mut self,
        text: &str,
        cancel: &AtomicBool,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, Failure> {
        self.conversation
            .turns
            .push(sieve_text::Message::new("user", text));
        let result = self.answer(cancel, on_text);
        if result.is_err() {
            self.conversation.turns.pop();
        }
        result
    }

    /// Generates the assistant's reply to the conversation as it stands, streaming its text
    /// through `on_text`, and adds it to the conversation (also when `cancel` stopped it:
    /// what was written stays).
    ///
    /// # Errors
    /// Usage: the conversation no longer fits the model's context, or the template fails;
    /// pipeline: a stage that cannot be built; runtime: a model or stage failure.
    pub fn answer(
        &mut self,
        cancel: &AtomicBool,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Generation, Failure> {
        let json = serde_json::to_string(&self.conversation.messages())
            .map_err(|e| Failure::usage(e.to_string()))?;
        let OpenModel { files, model } = &mut self.open;
        let (_, prompt) = chat::render(files, &json, true, None)?;
        let context = files.dir.context_len();
        sieve_engine::check_prompt(&prompt, 0, context).map_err(|_| {
            Failure::usage(format!(
                "the conversation is {} tokens, longer than the model's context of {context}: \
                 /undo an exchange, or start again",
                prompt.len()
            ))
        })?;
        let cx = BuildContext {
            seed: self.seed,
            vocab: Some(&files.vocab),
        };
        let mut stages = pipeline::build(&self.parsed, self.registry, &cx)?;
        let options = GenerateOptions {
            max_tokens: self.max_tokens,
            stop: Vec::new(),
            eos: files.dir.eos_ids(),
            vocab: Some(&files.vocab),
            accept_prompt: true,
            step_stats: false,
            cancel: Some(cancel),
            show_special: false,
        };
        let delay = self.delay;
        let mut pace = |piece: &str| {
            on_text(piece);
            if let Some(delay) = delay {
                std::thread::sleep(delay);
            }
        };
        let mut lent = self.cache.model(model);
        let generation = generate(
            &mut lent,
            &files.tokenizer,
            &mut stages,
            &prompt,
            &options,
            &mut pace,
        )
        .map_err(|e| Failure::Runtime(anyhow::Error::new(e)))?;
        self.conversation.turns.push(sieve_text::Message::new(
            "assistant",
            generation.text.as_str(),
        ));
        self.last = Some(Last {
            prompt,
            parsed: self.parsed.clone(),
            seed: self.seed,
            generation: generation.clone(),
            reused: self.cache.reused(),
        });
        Ok(generation)
    }

    /// Runs a command.
    pub fn command(&mut self, command: Slash) -> Outcome {
        match command {
            Slash::Sampler(None) => Outcome::Say(format!("sampler: {}\n", self.sampler())),
            Slash::Sampler(Some(text)) => self.set_sampler(&text),
            Slash::Trace => self.trace(),
            Slash::Seed(text) => match text.trim().parse::<u64>() {
                Ok(seed) => {
                    self.seed = seed;
                    Outcome::Say(format!("seed: {seed}\n"))
                }
                Err(_) => Outcome::Error(format!(
                    "/seed: `{text}` is not a seed (an integer from 0 to {})",
                    u64::MAX
                )),
            },
            Slash::System(text) => {
                let said = match &text {
                    Some(t) => format!("system message set ({} characters)\n", t.chars().count()),
                    None => "system message removed\n".to_string(),
                };
                self.conversation.system = text;
                Outcome::Say(said)
            }
            Slash::Undo => match self.conversation.undo() {
                0 => Outcome::Error("/undo: there is no exchange to drop".to_string()),
                n => Outcome::Say(format!(
                    "dropped the last exchange ({n} message{})\n",
                    if n == 1 { "" } else { "s" }
                )),
            },
            Slash::Save(None) => Outcome::Error("/save needs a file name: /save FILE.json".into()),
            Slash::Save(Some(path)) => match messages::save(&path, &self.conversation) {
                Ok(()) => Outcome::Say(format!(
                    "saved {} messages to {}\n",
                    self.conversation.messages().len(),
                    path.display()
                )),
                Err(e) => Outcome::Error(format!("/save: {e:#}")),
            },
            Slash::Stats => Outcome::Say(self.stats()),
            Slash::Help => Outcome::Say(HELP.to_string()),
            Slash::Quit => Outcome::Quit,
            Slash::Unknown(name) => Outcome::Error(format!(
                "unknown command /{name} (/help lists the commands)"
            )),
        }
    }

    /// `/sampler PIPELINE`: parsed and built once against the vocabulary (so that a
    /// constructor's error shows now, with its caret), then kept for the next replies.
    fn set_sampler(&mut self, text: &str) -> Outcome {
        let checked = pipeline::check(text, self.registry).and_then(|parsed| {
            let cx = BuildContext {
                seed: self.seed,
                vocab: Some(&self.open.files.vocab),
            };
            pipeline::build(&parsed, self.registry, &cx).map(|_| parsed)
        });
        match checked {
            Ok(parsed) => {
                self.parsed = parsed;
                Outcome::Say(format!("sampler: {}\n", self.sampler()))
            }
            Err(e) => Outcome::Error(said(&e)),
        }
    }

    /// `/trace`: the last reply's first token chosen again from the same logits, with the
    /// same pipeline, seed and history, drawn stage by stage as `sieve apply --trace` does.
    fn trace(&self) -> Outcome {
        let (Some(last), Some(logits)) = (&self.last, self.cache.first_logits()) else {
            return Outcome::Error("/trace: no reply yet".to_string());
        };
        if last.generation.tokens.is_empty() {
            return Outcome::Error("/trace: the last reply has no token".to_string());
        }
        let files = &self.open.files;
        let cx = BuildContext {
            seed: last.seed,
            vocab: Some(&files.vocab),
        };
        let mut stages = match pipeline::build(&last.parsed, self.registry, &cx) {
            Ok(stages) => stages,
            Err(e) => return Outcome::Error(said(&e)),
        };
        for &t in &last.prompt {
            stages.accept(t);
        }
        let mut candidates = Candidates::from_logits(logits);
        let step = Context {
            history: &last.prompt,
            prompt_len: last.prompt.len(),
            vocab: Some(&files.vocab),
            step: 0,
        };
        let mut trace = Trace::new(last.seed, last.parsed.spec().to_string(), &candidates);
        let chosen =
            stages.sample_observed(&mut candidates, &step, |stage, c| trace.push(stage, c));
        let mut text = trace.render();
        match chosen {
            Ok(token) => {
                let piece = files.tokenizer.decode(&[token]).unwrap_or_default();
                let _ = writeln!(text, "first token of the last reply: {token} {piece:?}");
                let began = last.generation.tokens[0];
                if token != began {
                    let _ = writeln!(
                        text,
                        "(the reply began with {began}: a stage of this pipeline does not \
                         choose the same way twice)"
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(text, "the pipeline failed: {e}");
            }
        }
        Outcome::Say(text)
    }

    /// `/stats`.
    fn stats(&self) -> String {
        let mut text = String::new();
        if let Some(last) = &self.last {
            let s = &last.generation.stats;
            let prefilled = s.prompt_tokens - last.reused;
            let _ = writeln!(
                text,
                "last reply:     {} tokens, finish reason {}",
                s.generated_tokens,
                last.generation.finish.as_str()
            );
            let _ = writeln!(
                text,
                "prompt:         {} tokens ({} from the cache, {prefilled} prefilled)",
                s.prompt_tokens, last.reused
            );
            let _ = writeln!(
                text,
                "first token:    {:.1} ms",
                s.time_to_first_token.as_secs_f64() * 1e3
            );
            let _ = writeln!(
                text,
                "prefill:        {:.1} tokens/s",
                tokens_per_second(prefilled, s.prefill_time)
            );
            let _ = writeln!(
                text,
                "decode:         {:.1} tokens/s",
                tokens_per_second(s.generated_tokens.saturating_sub(1), s.decode_time)
            );
        } else {
            text.push_str("last reply:     none yet\n");
        }
        let _ = writeln!(
            text,
            "conversation:   {} messages, {} of {} context tokens in the cache",
            self.conversation.messages().len(),
            self.cache.held().len(),
            self.open.files.dir.context_len()
        );
        let _ = writeln!(text, "sampler:        {}", self.sampler());
        let _ = writeln!(text, "seed:           {}", self.seed);
        let _ = writeln!(text, "max tokens:     {} per reply", self.max_tokens);
        text
    }
}

/// A failure's message as a command's error: without its `error: ` start (the front end
/// writes one) or its last newline.
fn said(failure: &Failure) -> String {
    let message = failure.message();
    let message = message.trim_end();
    message
        .strip_prefix("error: ")
        .unwrap_or(message)
        .to_string()
}

/// Whether a generation was stopped by Ctrl-C; clears `cancel` for the next reply.
pub fn interrupted(generation: &Generation, cancel: &AtomicBool) -> bool {
    cancel.store(false, Ordering::Relaxed);
    generation.finish == FinishReason::Cancelled
}
