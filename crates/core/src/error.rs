//! The one error type of `sieve-core`.

use alloc::string::String;

use crate::params::ParamKind;

/// Everything that can go wrong while loading candidates, building or running a pipeline.
///
/// Messages name what is wrong and where (the stage, the parameter, the index), so the command
/// line can print them as they are.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Sparse candidates were given with different numbers of ids and logits.
    #[error("{ids} token ids but {logits} logits")]
    LengthMismatch {
        /// Number of ids.
        ids: usize,
        /// Number of logits.
        logits: usize,
    },
    /// A stage masked or removed every candidate with a finite logit.
    #[error("stage `{stage}` left no finite candidate")]
    NoFiniteCandidates {
        /// Name of the stage after which nothing finite remained.
        stage: String,
    },
    /// The pipeline's last stage did not select a token.
    #[error("stage `{stage}` is the last stage but selected no token; end the pipeline with `dist` or `greedy`")]
    NoSelection {
        /// Name of the last stage.
        stage: String,
    },
    /// The pipeline has no stage at all.
    #[error("the pipeline has no stage")]
    EmptyPipeline,
    /// A stage name that no registered stage has.
    #[error("unknown stage `{name}`")]
    UnknownStage {
        /// The name asked for.
        name: String,
    },
    /// Two stage definitions with one name.
    #[error("stage `{name}` is defined twice: by {first} and by {second}")]
    DuplicateStage {
        /// The stage name.
        name: String,
        /// Where the registered definition came from.
        first: String,
        /// Where the rejected definition came from.
        second: String,
    },
    /// A required argument was not given.
    #[error("stage `{stage}`: missing argument `{param}`")]
    MissingArgument {
        /// The stage.
        stage: String,
        /// The parameter.
        param: String,
    },
    /// An argument of the wrong type.
    #[error("stage `{stage}`: argument `{param}` must be {expected}, found {found}")]
    WrongType {
        /// The stage.
        stage: String,
        /// The parameter.
        param: String,
        /// What the schema asks for.
        expected: ParamKind,
        /// What was given (a type name).
        found: &'static str,
    },
    /// An argument that has the right type but a value the stage cannot use.
    #[error("stage `{stage}`: argument `{param}`: {message}")]
    InvalidArgument {
        /// The stage.
        stage: String,
        /// The parameter.
        param: String,
        /// What is wrong with it.
        message: String,
    },
    /// A stage failed while running.
    #[error("stage `{stage}`: {message}")]
    Stage {
        /// The stage.
        stage: String,
        /// What went wrong.
        message: String,
    },
}
