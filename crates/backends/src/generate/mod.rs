//! The generation loop that joins a logits source to a `sieve_core::Pipeline`, and its
//! parts: the seams ([`LogitsSource`], [`Detokenize`]), incremental UTF-8-safe decoding
//! ([`IncrementalDecoder`]), stop strings with hold-back ([`StopStrings`]) and the report
//! ([`Generation`], [`GenerationStats`], [`FinishReason`]).
//!
//! The loop knows samplers only through `Pipeline`, `Candidates` and `Context`; it knows the
//! model only through [`LogitsSource`], so tests drive it with canned logits.

mod detok;
mod run;
mod source;
mod stats;
mod stop;

pub use detok::IncrementalDecoder;
pub use run::{generate, GenerateOptions, Generation};
pub use source::{Detokenize, LogitsSource};
pub use stats::{FinishReason, GenerationStats};
pub use stop::{StopMatch, StopStrings};
