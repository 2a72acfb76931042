//! # sieve-core
//!
//! The vocabulary every other sieve crate speaks:
//!
//! - [`Candidates`]: the token candidates of one decoding step, as a struct of arrays that stays
//!   *dense* (token id = index) until the first stage that truncates it, so that a
//!   full-vocabulary step reads the logits as few times as possible;
//! - [`Sampler`]: one stage of a pipeline (`apply`, `accept`, `reset`, `name`), modelled on
//!   llama.cpp's `llama_sampler_i`; selection (`dist`, `greedy`, mirostat) is a stage too;
//! - [`Context`]: what a stage may look at besides the candidates: the token history with the
//!   prompt length, the vocabulary bytes when known, the step index;
//! - [`SieveRng`]: a seeded, portable random generator (ChaCha8), identical on every machine;
//! - [`Registry`]: stage constructors by name with their parameter schemas, open to stages
//!   defined outside this crate (plugins register there);
//! - [`Pipeline`]: a built chain of stages that turns candidates into one token;
//! - [`plugin`]: the versioned C ABI of sampler plugins, the author's side
//!   ([`export_plugin!`]) and, with the `host` feature, loading plugin libraries.
//!
//! The crate is `#![no_std]` + `alloc`; the `std` feature adds `std::error::Error` impls and
//! the plugin author's side (which catches panics), the `host` feature plugin loading.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

extern crate alloc;

mod candidates;
mod context;
mod error;
pub mod math;
mod params;
mod pipeline;
pub mod plugin;
mod registry;
mod rng;
mod sampler;

pub use candidates::{rank, Candidates};
pub use context::{BuildContext, Context, Vocab};
pub use error::Error;
pub use params::{Args, ParamKind, ParamSpec, Range, Value, MAX_SEED};
pub use pipeline::Pipeline;
pub use registry::{BuildFn, Registry, StageEntry, StageInfo};
pub use rng::SieveRng;
pub use sampler::Sampler;

/// Result type of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;
