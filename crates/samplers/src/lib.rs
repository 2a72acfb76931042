//! # sieve-samplers
//!
//! The built-in stages of sieve, one file each. Every file's doc comment gives the stage's
//! formula, its paper or reference implementation, and its edge cases; its tests check vectors
//! derived by hand from the formula.
//!
//! | stage | kind | reference |
//! |---|---|---|
//! | [`greedy`] | selector | first maximum (lowest id on ties) |
//! | [`dist`] | selector | seeded inverse-CDF draw (llama.cpp `dist`) |
//! | [`temp`] | transform | temperature, and entropy-based dynamic temperature (llama.cpp `temp-ext`) |
//! | [`top_k`] | truncation | llama.cpp `top-k` |
//! | [`top_p`] | truncation | nucleus sampling, llama.cpp `top-p` |
//! | [`min_p`] | truncation | llama.cpp `min-p` (arXiv:2407.01082) |
//! | [`typical`] | truncation | locally typical sampling, llama.cpp `typical` (arXiv:2202.00666) |
//! | [`xtc`] | truncation | Exclude Top Choices, llama.cpp `xtc` |
//! | [`penalty`] | transform | CTRL repetition + OpenAI frequency/presence, llama.cpp `penalties` |
//! | [`logit_bias`] | transform | additive per-token bias |
//! | [`no_repeat_ngram`] | mask | HF `NoRepeatNGramLogitsProcessor` |
//! | [`epsilon`] | truncation | HF `EpsilonLogitsWarper` (arXiv:2210.15191) |
//! | [`eta`] | truncation | HF `EtaLogitsWarper` (arXiv:2210.15191) |
//! | [`mirostat`] | selector | Mirostat v1, llama.cpp `mirostat` (arXiv:2007.14966) |
//! | [`mirostat_v2`] | selector | Mirostat v2, llama.cpp `mirostat-v2` |
//!
//! # Adding a stage
//! One file, read top to bottom like [`top_k`]: the doc comment (formula, reference, edge
//! cases), the stage type with its [`Sampler`](sieve_core::Sampler) impl, a parameter struct
//! with `#[derive(Params)]` (field name = parameter name, `///` = its doc, `#[param(default =
//! …, range = …)]`; no default = required), the [`Stage`](sieve_core::Stage) impl (`NAME`,
//! `DOC`, `SELECTOR`, `ALIASES`, `new`), tests at the bottom; then one line in [`builtins`].
//! Helpers two stages share live in a shared module (`shared.rs`, `select.rs`), never in a
//! peer stage's file.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

extern crate alloc;

pub mod dist;
pub mod epsilon;
pub mod eta;
pub mod greedy;
pub mod logit_bias;
pub mod min_p;
pub mod mirostat;
pub mod mirostat_v2;
pub mod no_repeat_ngram;
pub mod penalty;
mod select;
mod shared;
pub mod temp;
pub mod top_k;
pub mod top_p;
pub mod typical;
pub mod xtc;

use sieve_core::{Error, Registry, StageEntry};

/// Every built-in stage's registry entry, in listing order.
pub fn builtins() -> alloc::vec::Vec<StageEntry> {
    alloc::vec![
        StageEntry::of::<greedy::Greedy>(),
        StageEntry::of::<dist::Dist>(),
        StageEntry::of::<temp::Temp>(),
        StageEntry::of::<top_k::TopK>(),
        StageEntry::of::<top_p::TopP>(),
        StageEntry::of::<min_p::MinP>(),
        StageEntry::of::<typical::Typical>(),
        StageEntry::of::<xtc::Xtc>(),
        StageEntry::of::<penalty::Penalty>(),
        StageEntry::of::<logit_bias::LogitBias>(),
        StageEntry::of::<no_repeat_ngram::NoRepeatNgram>(),
        StageEntry::of::<epsilon::Epsilon>(),
        StageEntry::of::<eta::Eta>(),
        StageEntry::of::<mirostat::Mirostat>(),
        StageEntry::of::<mirostat_v2::MirostatV2>(),
    ]
}

/// Registers every built-in stage.
///
/// # Errors
/// [`Error::DuplicateStage`] if `registry` already holds a stage with a built-in's name.
pub fn register_builtins(registry: &mut Registry) -> Result<(), Error> {
    builtins()
        .into_iter()
        .try_for_each(|entry| registry.register(entry))
}

/// A registry holding exactly the built-in stages.
pub fn builtin_registry() -> Registry {
    let mut registry = Registry::new();
    for entry in builtins() {
        // The built-in names are distinct, so registering into an empty registry cannot fail.
        let _ = registry.register(entry);
    }
    registry
}
