//! The one error type of the `sieve` crate.

/// What can go wrong while compiling or running a [`crate::Chain`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pipeline text does not compile. The message is the rendered diagnostic: the source
    /// line, a caret under the mistake and a help line, as `sieve check` prints it.
    #[error("{rendered}")]
    Pipeline {
        /// The diagnostic (kind, span, message, help).
        diagnostic: sieve_dsl::Diagnostic,
        /// [`sieve_dsl::Diagnostic::render`] of it against the pipeline text.
        rendered: String,
    },
    /// The input cannot be run: a logit that is NaN or `+inf` (position and value named), or
    /// a history token beyond the vocabulary.
    #[error("{0}")]
    Input(String),
    /// A stage failed while running (for instance no finite candidate was left).
    #[error(transparent)]
    Run(#[from] sieve_core::Error),
}
