//! The chat without a terminal: one message per input line, one reply per output line.
//!
//! - A reply is streamed as it is generated and ends with a newline; inside it a newline is
//!   written `\n` and a backslash `\\`, so that each reply stays on one line.
//! - Lines starting with `/` are commands (`//` sends a message starting with `/`); their
//!   answers and every error go to stderr, so stdout holds the replies alone.
//! - A conversation loaded with `--load` that ends with a user message is answered first.
//! - Ctrl-C ends the program as usual (there is no reply to stop for a person here).
//!
//! A reply that fails (the conversation outgrew the context) writes an empty line, so the
//! replies keep matching the messages line for line, and the exit code becomes 1.

use std::io::{BufRead, Write};
use std::sync::atomic::AtomicBool;

use super::session::{Outcome, Session};
use super::slash::{self, Line};
use crate::error::{write_stderr, Failure};

/// Reads stdin to its end (or `/quit`), writing replies to `out`.
///
/// # Errors
/// Output: stdout failed; runtime: stdin could not be read, or a reply failed (after the
/// rest of the input was answered).
pub fn run(mut session: Session<'_>, out: &mut dyn Write) -> Result<(), Failure> {
    let cancel = AtomicBool::new(false);
    let mut failed = false;
    if session.awaits_reply() {
        failed |= answer(&mut session, None, &cancel, out)?;
    }
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| Failure::Runtime(anyhow::anyhow!("reading stdin: {e}")))?;
        match slash::parse(&line) {
            Line::Empty => {}
            Line::Message(text) => failed |= answer(&mut session, Some(&text), &cancel, out)?,
            Line::Command(command) => match session.command(command) {
                Outcome::Say(text) => write_stderr(&text)?,
                Outcome::Error(text) => write_stderr(&format!("error: {text}\n"))?,
                Outcome::Quit => break,
            },
        }
    }
    if failed {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "some messages got no reply (see above)"
        )));
    }
    Ok(())
}

/// Replies to `text` (or to the conversation as it stands), one line on `out`; whether it
/// failed.
fn answer(
    session: &mut Session<'_>,
    text: Option<&str>,
    cancel: &AtomicBool,
    out: &mut dyn Write,
) -> Result<bool, Failure> {
    let mut write_error = None;
    let mut on_text = |piece: &str| {
        if write_error.is_none() {
            if let Err(e) = out
                .write_all(escape(piece).as_bytes())
                .and_then(|()| out.flush())
            {
                write_error = Some(e);
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
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
    let failed = match result {
        Ok(_) => false,
        Err(e) => {
            write_stderr(&e.message())?;
            true
        }
    };
    writeln!(out)
        .and_then(|()| out.flush())
        .map_err(Failure::Output)?;
    Ok(failed)
}

/// A piece of reply text with newlines and backslashes escaped.
pub fn escape(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_stay_on_one_line() {
        assert_eq!(escape("a\nb\\n\r"), "a\\nb\\\\n\\r");
    }
}
