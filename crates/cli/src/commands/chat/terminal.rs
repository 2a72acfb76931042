//! The chat on a terminal: a prompt with line editing and history (rustyline), replies
//! streamed as they are generated, `/` commands between turns.
//!
//! Ctrl-C while a reply is written stops it (the loop checks between tokens; what was
//! written stays in the conversation); Ctrl-C at the prompt clears the line, as in a shell;
//! Ctrl-D at the prompt (or `/quit`) leaves.
//!
//! The line editor exists only while a line is read: rustyline takes SIGINT over for the
//! lifetime of its editor (and gives it back when dropped), so a reply runs with the
//! handler that sets the cancel flag, and the history is kept here and handed to each editor.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use super::session::{interrupted, Outcome, Session};
use super::slash::{self, Line};
use crate::error::{write_stderr, Failure};

/// The prompt.
const PROMPT: &str = ">>> ";

/// Runs the chat until Ctrl-D or `/quit`, writing to `out` (the terminal).
///
/// # Errors
/// Runtime: the terminal cannot be read; output: it cannot be written.
pub fn run(
    mut session: Session<'_>,
    model: &str,
    backend: &str,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let cancel = Arc::new(AtomicBool::new(false));
    // Should registering fail, Ctrl-C ends the program as it would without a handler.
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&cancel));
    let mut history: Vec<String> = Vec::new();
    let greeting = format!(
        "sieve chat: {model} on {backend}\nsampler: {}\nseed: {}\n\
         /help lists the commands; Ctrl-C stops a reply, Ctrl-D quits.\n",
        session.sampler(),
        session.seed()
    );
    say(out, &greeting)?;
    if session.awaits_reply() {
        answer(&mut session, None, &cancel, out)?;
    }
    loop {
        let line = match read_line(&history) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                say(out, "(Ctrl-D or /quit leaves)\n")?;
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                return Err(Failure::Runtime(anyhow::anyhow!(
                    "reading the terminal: {e}"
                )))
            }
        };
        let parsed = slash::parse(&line);
        if parsed != Line::Empty && history.last() != Some(&line) {
            history.push(line.clone());
        }
        match parsed {
            Line::Empty => {}
            Line::Message(text) => answer(&mut session, Some(&text), &cancel, out)?,
            Line::Command(command) => match session.command(command) {
                Outcome::Say(text) => say(out, &text)?,
                Outcome::Error(text) => write_stderr(&format!("error: {text}\n"))?,
                Outcome::Quit => break,
            },
        }
    }
    Ok(())
}

/// Reads one line with an editor that knows `history` (Up and Down recall it).
fn read_line(history: &[String]) -> Result<String, ReadlineError> {
    let mut editor = DefaultEditor::new()?;
    for line in history {
        editor.add_history_entry(line.as_str())?;
    }
    editor.readline(PROMPT)
}

/// Streams the reply to `text` (or to the conversation as it stands) to `out`.
fn answer(
    session: &mut Session<'_>,
    text: Option<&str>,
    cancel: &AtomicBool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    cancel.store(false, Ordering::Relaxed);
    let mut write_error = None;
    let mut on_text = |piece: &str| {
        if write_error.is_none() {
            if let Err(e) = out.write_all(piece.as_bytes()).and_then(|()| out.flush()) {
                write_error = Some(e);
                cancel.store(true, Ordering::Relaxed);
            }
        }
    };
    let result = match text {
        Some(text) => session.reply(text, cancel, &mut on_text),
        None => session.answer(cancel, &mut on_text),
    };
    if let Some(e) = write_error {
        return Err(Failure::Output(e));
    }
    match result {
        Ok(generation) if interrupted(&generation, cancel) => say(
            out,
            "\n[stopped; what was written stays in the conversation]\n",
        ),
        Ok(_) => say(out, "\n"),
        Err(e) => {
            say(out, "\n")?;
            write_stderr(&e.message())
        }
    }
}

/// Writes `text` to the terminal.
fn say(out: &mut dyn Write, text: &str) -> Result<(), Failure> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Failure::Output)
}
