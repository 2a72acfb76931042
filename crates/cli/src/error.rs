//! How a command fails: the error kinds, their exit codes, and how they are reported.

use std::fmt::{Debug, Display};
use std::io;
use std::process::ExitCode;

/// Why a command stopped, which decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// Bad usage or bad input (a flag value, a `--logits` list or file): exit code 2.
    Usage(anyhow::Error),
    /// A pipeline text that does not compile: the rendered diagnostic (source line and caret),
    /// exit code 2.
    Pipeline(String),
    /// The input was fine but running failed (a stage left no candidate): exit code 1.
    Runtime(anyhow::Error),
    /// Writing the output failed (a closed pipe ends the command quietly).
    Output(io::Error),
    /// Writing to stderr (a note, `--stats`) failed: exit code 1, a closed pipe included
    /// (what was meant for the user was lost).
    Stderr(io::Error),
    /// Ctrl-C stopped the command after it reported what it had done: exit code 130.
    Interrupted,
}

impl Failure {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) | Failure::Pipeline(_) => 2,
            Failure::Runtime(_) => 1,
            Failure::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
            Failure::Output(_) | Failure::Stderr(_) => 1,
            Failure::Interrupted => 130,
        }
    }

    /// What to print on stderr: one `error: …` line, or the multi-line pipeline diagnostic;
    /// nothing for a closed output pipe (the reader has stopped listening, nothing is wrong).
    pub fn message(&self) -> String {
        let mut text = match self {
            Failure::Usage(e) | Failure::Runtime(e) => format!("error: {e:#}"),
            Failure::Pipeline(rendered) => rendered.clone(),
            Failure::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => return String::new(),
            Failure::Output(e) => format!("error: writing the output: {e}"),
            Failure::Stderr(e) => format!("error: writing to stderr: {e}"),
            Failure::Interrupted => "interrupted".to_string(),
        };
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    }

    /// Prints [`Failure::message`] on stderr and returns the exit code; when stderr cannot
    /// take the message, exit code 1 (never a panic).
    pub fn report(&self) -> ExitCode {
        match write_stderr(&self.message()) {
            Ok(()) => ExitCode::from(self.exit_code()),
            Err(_) if matches!(self, Failure::Interrupted) => ExitCode::from(130),
            Err(_) => ExitCode::from(1),
        }
    }

    /// A usage failure with this message.
    pub fn usage(message: impl Display + Debug + Send + Sync + 'static) -> Self {
        Failure::Usage(anyhow::Error::msg(message))
    }
}

/// Writes `text` to stderr and flushes it: the one way the command line writes there (no
/// `eprint!`, which panics when stderr is full or closed).
///
/// # Errors
/// [`Failure::Stderr`].
pub fn write_stderr(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    if text.is_empty() {
        return Ok(());
    }
    let mut err = io::stderr().lock();
    err.write_all(text.as_bytes())
        .and_then(|()| err.flush())
        .map_err(Failure::Stderr)
}

/// Classifies the error of a `Result` as a [`Failure`] kind.
pub trait ResultExt<T> {
    /// The error is the user's: bad usage or input (exit code 2).
    fn usage(self) -> Result<T, Failure>;
    /// The error happened while running (exit code 1).
    fn runtime(self) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> ResultExt<T> for Result<T, E> {
    fn usage(self) -> Result<T, Failure> {
        self.map_err(|e| Failure::Usage(e.into()))
    }
    fn runtime(self) -> Result<T, Failure> {
        self.map_err(|e| Failure::Runtime(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn kinds_map_to_exit_codes() {
        assert_eq!(Failure::usage("x").exit_code(), 2);
        assert_eq!(Failure::Pipeline("error: x".into()).exit_code(), 2);
        assert_eq!(Failure::Runtime(anyhow::anyhow!("x")).exit_code(), 1);
        assert_eq!(
            Failure::Output(io::ErrorKind::BrokenPipe.into()).exit_code(),
            0
        );
        assert_eq!(Failure::Output(io::ErrorKind::Other.into()).exit_code(), 1);
        assert_eq!(
            Failure::Stderr(io::ErrorKind::BrokenPipe.into()).exit_code(),
            1
        );
        assert_eq!(Failure::Interrupted.exit_code(), 130);
    }

    #[test]
    fn messages_are_one_line_with_context_chain() {
        let r: Result<(), anyhow::Error> = Err(anyhow::anyhow!("value 3 (`abc`) is not a number"));
        let f = r.context("--logits").usage().unwrap_err();
        assert_eq!(
            f.message(),
            "error: --logits: value 3 (`abc`) is not a number\n"
        );
        assert_eq!(
            Failure::Pipeline("error: bad\n  --> x".into()).message(),
            "error: bad\n  --> x\n"
        );
        assert_eq!(
            Failure::Output(io::ErrorKind::BrokenPipe.into()).message(),
            ""
        );
    }
}
