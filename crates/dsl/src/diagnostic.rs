//! [`Diagnostic`]: the one error type of sieve-dsl.

use alloc::string::String;
use core::fmt;

use crate::span::{line_column, Span};

/// What kind of mistake a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiagnosticKind {
    /// The text does not follow the grammar (including an empty pipeline and an unterminated
    /// string).
    Syntax,
    /// A literal that follows the grammar but means nothing: an integer beyond `i64`, a float
    /// beyond `f64`, `40k`, an unknown escape `\q`, a map key that is neither an integer nor a
    /// string.
    InvalidLiteral,
    /// Brackets nested deeper than [`crate::MAX_NESTING`].
    TooDeep,
    /// A stage name that the registry does not know.
    UnknownStage,
    /// A parameter name that the stage does not have.
    UnknownParam,
    /// A parameter given twice (by position and by name, or twice by name).
    DuplicateParam,
    /// More positional arguments than the stage has parameters.
    TooManyArguments,
    /// A positional argument after a named one.
    PositionalAfterNamed,
    /// A required parameter that was not given.
    MissingArgument,
    /// An argument of the wrong type.
    WrongType,
    /// A number outside its parameter's valid range.
    OutOfRange,
    /// A selector (`greedy`, `dist`, …) that is not the last stage: the stages after it could
    /// not change the token it chose.
    SelectorNotLast,
    /// The pipeline does not end in a selector and the registry has no usable `dist` stage to
    /// append.
    NoSelector,
    /// A stage constructor rejected an argument ([`sieve_core::Error::InvalidArgument`]).
    InvalidArgument,
    /// A stage constructor failed for another reason.
    Build,
}

/// What is wrong, where, and how to fix it.
///
/// `Display` gives one line (`line 1, column 13: unknown stage `top_q` (did you mean
/// `top_p`?)`); [`Diagnostic::render`] gives the multi-line form with the source line and a
/// caret under the span.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}{}", HelpSuffix(help.as_deref()))]
pub struct Diagnostic {
    /// The kind of mistake.
    pub kind: DiagnosticKind,
    /// What is wrong, e.g. "unknown stage `top_q`".
    pub message: String,
    /// Where, in the text the diagnostic was made for.
    pub span: Span,
    /// 1-based line of `span.start`.
    pub line: usize,
    /// 1-based column of `span.start`, in characters.
    pub column: usize,
    /// How to fix it, e.g. "did you mean `top_p`?".
    pub help: Option<String>,
}

pub(crate) struct HelpSuffix<'a>(pub(crate) Option<&'a str>);

impl fmt::Display for HelpSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(help) => write!(f, " ({help})"),
            None => Ok(()),
        }
    }
}

impl Diagnostic {
    /// A diagnostic about `span` of `source` (line and column are computed from it).
    pub fn new(kind: DiagnosticKind, message: impl Into<String>, span: Span, source: &str) -> Self {
        let span = span.clamp(source);
        let (line, column) = line_column(source, span.start);
        Diagnostic {
            kind,
            message: message.into(),
            span,
            line,
            column,
            help: None,
        }
    }

    /// The same diagnostic with a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// `text` cut to at most `max` characters (with `…`), for quoting user input in messages.
pub(crate) fn clip(text: &str, max: usize) -> alloc::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => alloc::borrow::Cow::Borrowed(text),
        Some((cut, _)) => alloc::borrow::Cow::Owned(alloc::format!("{}…", &text[..cut])),
    }
}

/// The diagnostic for a pipeline without a stage (blank text, or an empty list of stage
/// objects).
pub(crate) fn empty_pipeline(source: &str) -> Diagnostic {
    Diagnostic::new(
        DiagnosticKind::Syntax,
        "empty pipeline",
        Span::point(0),
        source,
    )
    .with_help("write at least one stage, e.g. `top_k(40) | top_p(0.9)`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn one_line_display_has_position_message_and_help() {
        let src = "temp(0.7) | top_q(0.9)";
        let d = Diagnostic::new(
            DiagnosticKind::UnknownStage,
            "unknown stage `top_q`",
            Span::new(12, 17),
            src,
        );
        assert_eq!((d.line, d.column), (1, 13));
        assert_eq!(d.to_string(), "line 1, column 13: unknown stage `top_q`");
        let d = d.with_help("did you mean `top_p`?");
        assert_eq!(
            d.to_string(),
            "line 1, column 13: unknown stage `top_q` (did you mean `top_p`?)"
        );
    }

    #[test]
    fn spans_outside_the_source_are_clamped() {
        let d = Diagnostic::new(DiagnosticKind::Syntax, "x", Span::new(50, 60), "ab");
        assert_eq!(d.span, Span::new(2, 2));
        assert_eq!((d.line, d.column), (1, 3));
    }
}
