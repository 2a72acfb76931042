//! # sieve-core
//!
//! The vocabulary every other sieve crate speaks:
//!
//! - [`Candidates`]: the token candidates of one decoding step, as a struct of arrays that stays
//!   *dense* (token id = index) until the first stage that truncates it, so that a
//!   full-vocabulary step reads the logits as few times as possible;
//! - [`Sampler`]: one stage of a pipeline (`apply`, `accept`, `reset`), modelled on
//!   llama.cpp's `llama_sampler_i`; selection (`dist`, `greedy`, mirostat) is a stage too;
//! - [`Context`]: what a stage may look at besides the candidates: the token history with the
//!   prompt length, the vocabulary bytes when known, the step index;
//! - [`SieveRng`]: a seeded, portable random generator (ChaCha8), identical on every machine;
//! - [`Registry`]: stage constructors by name with their parameter schemas, open to stages
//!   defined outside this crate (plugins register there);
//! - [`Nucleus`]: the nucleus (top-p) truncation of long candidate lists without a full sort
//!   ([`nucleus`] explains how the cut is decided);
//! - [`Pipeline`]: a built chain of stages that turns candidates into one token;
//! - [`Stage`] and [`Params`] (with `#[derive(Params)]`): the one way to define a stage,
//!   built-in or plugin: a name, a doc line and a typed parameter struct whose fields are
//!   the schema ([`stage`] shows a whole stage).
//!
//! Plugins (the C ABI, the author's side) live in `sieve-plugin`, loading them in
//! `sieve-plugin-host`.
//!
//! The crate is `#![no_std]` + `alloc`; the `std` feature adds `std::error::Error` impls.
//! It has no `unsafe` code outside its documented vectorized kernels ([`math`]).
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;
// Lets `#[derive(Params)]`'s `::sieve_core::…` paths resolve inside this crate too.
extern crate self as sieve_core;

mod args;
mod candidates;
mod context;
mod error;
pub mod math;
pub mod nucleus;
mod params;
mod pipeline;
pub mod prefilter;
mod registry;
mod rng;
mod sampler;
pub mod stage;

pub use args::Args;
pub use candidates::{rank, Candidates};
pub use context::{BuildContext, Context, Vocab};
pub use error::Error;
pub use nucleus::Nucleus;
pub use params::{ParamError, ParamKind, ParamSpec, Range, Value, MAX_SEED};
pub use pipeline::Pipeline;
pub use registry::{BuildFn, PluginOrigin, Registry, StageEntry, StageInfo};
pub use rng::SieveRng;
pub use sampler::{Footprint, Sampler};
/// `#[derive(Params)]`: a stage's schema and argument reading from a struct (see [`stage`]
/// and the `sieve-macros` crate).
pub use sieve_macros::Params;
pub use stage::{ParamType, Params, Seed, Stage};

/// What the code `#[derive(Params)]` writes refers to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::{Args, Error, ParamSpec, ParamType, Params};
    pub use alloc::string::ToString;
    pub use alloc::vec::Vec;
}

/// Result type of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;
