//! The grammar's state over one generation: an llguidance [`Matcher`] kept in step with the
//! generated tokens, and the mask it allows.
//!
//! # Which tokens the grammar reads
//! The grammar constrains the *generated* text only: `cx.history[cx.prompt_len..]` of the
//! step context. The prompt is never fed to it. Hosts pass prompt tokens to `accept` too
//! (`sieve generate` accepts the prompt before the first step, `sieve apply` its
//! `--history`), so:
//!
//! - tokens accepted before the first [`Constraint::mask`] since creation or
//!   [`Constraint::reset`] are prompt tokens and are ignored;
//! - after that, every accepted token advances the parser at once (a token the grammar
//!   refuses is remembered and reported by the next [`Constraint::mask`]);
//! - each [`Constraint::mask`] then checks the parser against the generated tokens of the
//!   context: tokens the host did not pass to `accept` are fed, and if the history is not an
//!   extension of what the parser read (the host went back, or started anew without a reset),
//!   the parser restarts and reads the generated tokens from the beginning.

use llguidance::api::StopReason;
use llguidance::Matcher;
use sieve_plugin::Error;
use toktrie::{SimpleVob, TokEnv, TokTrie, INVALID_TOKEN};

/// Characters of text shown in an error, at most (the end of the text).
const SHOWN_CHARS: usize = 60;

fn failed(message: String) -> Error {
    Error::Stage {
        stage: "grammar".into(),
        message,
    }
}

/// The first line of an llguidance error (a dump of the parser state may follow).
fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

/// One generation's grammar state.
pub struct Constraint {
    /// The parser in its initial state, cloned on every restart.
    initial: Matcher,
    matcher: Matcher,
    env: TokEnv,
    /// The tokens the parser has read.
    consumed: Vec<u32>,
    /// Whether a mask was computed since creation or the last reset (accepted tokens from
    /// then on are generated, not prompt).
    started: bool,
    /// A token `accept` got that the grammar refuses, with the error to report.
    rejected: Option<String>,
}

impl Constraint {
    /// The state of a fresh parser (`matcher`) over vocabulary `env`.
    pub fn new(matcher: Matcher, env: TokEnv) -> Self {
        Constraint {
            initial: matcher.clone(),
            matcher,
            env,
            consumed: Vec::new(),
            started: false,
            rejected: None,
        }
    }

    /// Back to the start: nothing read, the next accepted tokens are prompt again.
    pub fn reset(&mut self) {
        self.matcher = self.initial.clone();
        self.consumed.clear();
        self.started = false;
        self.rejected = None;
    }

    /// The tokens the parser has read.
    pub fn consumed(&self) -> &[u32] {
        &self.consumed
    }

    /// Passes a chosen token: ignored before the first mask (a prompt token), fed to the
    /// parser after.
    pub fn accept(&mut self, token: u32) {
        if !self.started || self.rejected.is_some() {
            return;
        }
        if let Err(e) = self.feed(token) {
            self.rejected = Some(e);
        }
    }

    /// Feeds one token; on refusal the parser is unchanged and the message says why.
    fn feed(&mut self, token: u32) -> Result<(), String> {
        let vocab = self.env.tok_trie().vocab_size();
        if token as usize >= vocab {
            return Err(format!(
                "token {token} is outside the vocabulary of {vocab} tokens"
            ));
        }
        let trie = self.env.tok_trie();
        if self.matcher.is_stopped()
            && !self.matcher.is_error()
            && trie.eos_tokens().contains(&token)
        {
            // The grammar is complete and only EOS was allowed: nothing left to parse.
            self.consumed.push(token);
            return Ok(());
        }
        match self.matcher.try_consume_tokens(&[token]) {
            Ok(1) => {
                self.consumed.push(token);
                Ok(())
            }
            Ok(_) => Err(format!(
                "token {token} ({}) is not allowed by the grammar {}",
                self.token_text(token),
                self.position()
            )),
            Err(e) => {
                // An error leaves the matcher in an error state: rebuild it.
                self.restore();
                Err(format!(
                    "token {token} ({}) {}: {}",
                    self.token_text(token),
                    self.position(),
                    first_line(&e.to_string())
                ))
            }
        }
    }

    /// Rebuilds the parser from its initial state and the tokens read; false if they no
    /// longer all go through (only possible after an EOS that ended the grammar).
    fn restore(&mut self) -> bool {
        self.matcher = self.initial.clone();
        let n = self.consumed.len();
        n == 0 || matches!(self.matcher.try_consume_tokens(&self.consumed), Ok(k) if k == n)
    }

    /// Brings the parser in step with `generated` (the generated part of the history).
    fn sync(&mut self, generated: &[u32]) -> Result<(), Error> {
        if let Some(e) = self.rejected.take() {
            return Err(failed(e));
        }
        if !generated.starts_with(&self.consumed) {
            self.matcher = self.initial.clone();
            self.consumed.clear();
        }
        for &t in &generated[self.consumed.len()..] {
            self.feed(t).map_err(failed)?;
        }
        Ok(())
    }

    /// The tokens the grammar allows after `generated`: EOS ids only where the grammar may
    /// end. Marks the generation as started.
    ///
    /// # Errors
    /// [`Error::Stage`] naming the position: a token of `generated` (or one accepted) the
    /// grammar refuses, or a state where no token of the vocabulary is allowed.
    pub fn mask(&mut self, generated: &[u32]) -> Result<SimpleVob, Error> {
        self.started = true;
        self.sync(generated)?;
        let why = match self.matcher.compute_mask_or_eos() {
            Ok(mask) if !mask.is_zero() => return Ok(mask),
            Ok(_) => None,
            // The error's first line is the stop reason (a dump of the parser state follows);
            // llguidance stops with this one when no token is allowed.
            Err(e) => {
                let first = first_line(&e.to_string());
                (first != StopReason::NoExtensionBias.to_string()).then_some(first)
            }
        };
        // A failed mask leaves the matcher in an error state: rebuild it at the same position,
        // so that the stage stays usable (after a reset, or on another history).
        let replayed = self.restore();
        if let Some(why) = why {
            return Err(failed(format!(
                "llguidance could not compute the mask {}: {}",
                self.position(),
                why
            )));
        }
        let ending = replayed && self.matcher.is_accepting().unwrap_or(false);
        let no_eos = self
            .env
            .tok_trie()
            .eos_tokens()
            .iter()
            .all(|&t| t == INVALID_TOKEN);
        let hint = if ending && no_eos {
            " (the grammar is complete, but the vocabulary has no end-of-sequence token to end with)"
        } else {
            ""
        };
        Err(failed(format!(
            "the grammar admits no token of the vocabulary {}{hint}",
            self.position()
        )))
    }

    /// `after N generated tokens ("…text")`: where the parser stands.
    pub fn position(&self) -> String {
        let n = self.consumed.len();
        if n == 0 {
            return "at the start of the output".to_string();
        }
        let text = self.env.tok_trie().decode_str(&self.consumed);
        let chars: Vec<char> = text.chars().collect();
        let shown: String = chars[chars.len().saturating_sub(SHOWN_CHARS)..]
            .iter()
            .collect();
        let ellipsis = if chars.len() > SHOWN_CHARS { "…" } else { "" };
        let plural = if n == 1 { "" } else { "s" };
        format!("after {n} generated token{plural} (text so far: {ellipsis}{shown:?})")
    }

    /// Token `id`'s bytes as a quoted string (`"end-of-sequence"` for an EOS token).
    fn token_text(&self, id: u32) -> String {
        let bytes = self.env.tok_trie().token(id);
        match bytes.split_first() {
            Some((&TokTrie::SPECIAL_TOKEN_MARKER, _)) => "end-of-sequence".to_string(),
            _ => format!("{:?}", String::from_utf8_lossy(bytes)),
        }
    }
}
