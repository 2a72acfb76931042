//! The one error type of `sieve-engine`.

/// An error of a model or detokenizer the loop drives, boxed so that the engine needs no
/// knowledge of the crate that made it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong while generating.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No token was given where at least one is needed.
    #[error("the prompt has no token")]
    EmptyPrompt,
    /// More tokens than the model's context holds.
    #[error("{tokens} tokens exceed the model's context of {context}")]
    ContextOverflow {
        /// The number of tokens that would be in the context.
        tokens: usize,
        /// The context length.
        context: usize,
    },
    /// An empty stop string (it would stop before the first character).
    #[error("stop strings must not be empty")]
    EmptyStop,
    /// Too many stop strings, or one too long (see [`crate::stop::MAX_STOP_STRINGS`] and
    /// [`crate::stop::MAX_STOP_BYTES`]).
    #[error(transparent)]
    StopLimit(#[from] crate::stop::StopLimit),
    /// A logits vector of another length than the model's vocabulary.
    #[error("the model returned {found} logits, expected {expected}")]
    LogitsLength {
        /// The vocabulary size.
        expected: usize,
        /// The length returned.
        found: usize,
    },
    /// The model returned NaN logits (a broken checkpoint or a numeric overflow in the
    /// model): reported as the model's fault, before any stage sees them.
    #[error("the model produced {count} NaN logits of {vocab} at generation step {step}")]
    ModelNan {
        /// The step (0: the logits after the prompt).
        step: usize,
        /// How many logits were NaN.
        count: usize,
        /// The vocabulary size.
        vocab: usize,
    },
    /// A sequence handle the model does not hold (never opened, or closed).
    #[error("{0} is not held by the model")]
    UnknownSequence(crate::SeqId),
    /// One step fed the same sequence twice.
    #[error("{0} is fed twice in one step")]
    DuplicateSequence(crate::SeqId),
    /// Beam search was given a pipeline that ends in a random selector.
    #[error(
        "beam search ranks every continuation by its score and keeps the best, so the pipeline \
         must end in `greedy`, not the random selector `{selector}` (the DSL appends `dist` to a \
         pipeline without a selector: write `… | greedy`)"
    )]
    BeamSelector {
        /// The selector the pipeline ends in.
        selector: String,
    },
    /// Beam-search options that cannot work: no beam, more sequences to return than beams
    /// (or none), no token to generate, or not one pipeline per beam.
    #[error("beam search: {0}")]
    BeamOptions(BeamOptionsError),
    /// Speculative decoding was asked of a pipeline whose selector draws from no
    /// distribution it exposes (`mirostat`, `mirostat_v2`, a plugin's selector): draft tokens
    /// can only be accepted exactly against the distribution the selector draws from.
    #[error(
        "speculative decoding needs the distribution the selector draws from, and `{selector}` \
         exposes none: end the pipeline with `dist` or `greedy`"
    )]
    SpeculativeSelector {
        /// The last stage's name.
        selector: String,
    },
    /// The sampler pipeline failed. The message includes the stage's error, which is
    /// therefore not also reported as this error's `source` (a report that prints the chain
    /// would say it twice).
    #[error("sampling: {0}")]
    Sampling(sieve_core::Error),
    /// The model failed (an out-of-range id, a full context, a device error); the message is
    /// the model's own.
    #[error(transparent)]
    Model(BoxError),
    /// The detokenizer failed; the message is the detokenizer's own.
    #[error(transparent)]
    Detokenize(BoxError),
    /// The scheduler's queue of waiting requests is full.
    #[error("the server is busy: {capacity} requests are already waiting")]
    QueueFull {
        /// The most requests that may wait.
        capacity: usize,
    },
    /// A request asks for no choice, or for more than can run at once.
    #[error("{n} choices asked for; between 1 and {parallel} can run at once")]
    Choices {
        /// The choices asked for.
        n: usize,
        /// The most sequences that run at once.
        parallel: usize,
    },
    /// The scheduler does not run (its model failed to load, or it was shut down).
    #[error("{0}")]
    Stopped(String),
}

/// What is wrong with a [`BeamOptions`](crate::BeamOptions) (see [`Error::BeamOptions`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeamOptionsError {
    /// `beams` is 0.
    #[error("at least one beam is needed")]
    NoBeams,
    /// `num_return` is 0 or more than `beams` (transformers rejects
    /// `num_return_sequences > num_beams` too: only the `beams` best are kept).
    #[error("cannot return {num_return} sequences from {beams} beams (1 to {beams})")]
    NumReturn {
        /// The sequences asked for.
        num_return: usize,
        /// The beams.
        beams: usize,
    },
    /// `max_tokens` is 0 (transformers rejects `max_new_tokens = 0` too).
    #[error("max_tokens must be at least 1")]
    NoTokens,
    /// Not exactly one pipeline per beam.
    #[error("{pipelines} pipelines for {beams} beams (one per beam is needed)")]
    Pipelines {
        /// The pipelines given.
        pipelines: usize,
        /// The beams.
        beams: usize,
    },
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<sieve_core::Error> for Error {
    fn from(e: sieve_core::Error) -> Self {
        Error::Sampling(e)
    }
}
