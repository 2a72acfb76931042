//! # sieve
//!
//! The front door of sieve for Rust code, and for pinning *your* sampler chains with snapshot
//! tests: compile a pipeline from its text, run it over logits with a history and a seed, and
//! get a plain, serializable result.
//!
//! ```
//! let mut chain = sieve::Chain::new("penalty(1.3) | top_k(3) | temp(0.5)", 7)?;
//! let outcome = chain.apply(&[1.0, 2.0, 3.0, 0.5], &[2])?;
//! assert_eq!(outcome.survivors.len(), 3);
//! assert_eq!(outcome.trace[0].stage, "input");
//! let tokens = chain.draws(&[1.0, 2.0, 3.0, 0.5], &[2], 20)?;
//! assert_eq!(tokens.len(), 20);
//! # Ok::<(), sieve::Error>(())
//! ```
//!
//! - [`Chain`]: a compiled pipeline (built-in stages with [`Chain::new`], or any
//!   [`Registry`] with [`Chain::with_registry`]); [`Chain::apply`] runs one step and returns
//!   an [`Outcome`]; [`Chain::draws`] draws a seeded sequence the way a decoding loop does.
//! - [`Outcome`]: the canonical pipeline, the seed, the selected token, the survivors (id,
//!   logit, probability renormalized over them, most likely first) and the distribution after
//!   every stage ([`outcome::StageStep`]). It derives `serde::Serialize`, so it goes straight
//!   into `insta::assert_yaml_snapshot!` or `assert_json_snapshot!`.
//! - The crates underneath are re-exported: [`core`] (`sieve-core`: candidates, the `Sampler`
//!   trait, registry, pipeline), [`dsl`] (`sieve-dsl`: the pipeline language) and
//!   [`samplers`] (`sieve-samplers`: the built-in stages).
//!
//! # Pinning a chain with insta
//!
//! In your crate's `Cargo.toml`:
//!
//! ```toml
//! [dev-dependencies]
//! sieve = { git = "https://github.com/sieve-rs/sieve" }   # or { path = ".../crates/sieve" }
//! insta = { version = "1", features = ["yaml"] }
//! ```
//!
//! and a test (this one runs in sieve's CI as `crates/sieve/tests/pin_a_chain.rs`):
//!
//! ```ignore
//! #[test]
//! fn my_chain_keeps_three_tokens() {
//!     let mut chain = sieve::Chain::new("top_k(3) | temp(0.5)", 7).unwrap();
//!     insta::assert_yaml_snapshot!(chain.apply(&[1.0, 2.0, 3.0, 0.5], &[]).unwrap());
//! }
//!
//! #[test]
//! fn my_chain_draws_the_same_twenty_tokens() {
//!     let mut chain = sieve::Chain::new("penalty(1.3) | temp(0.8) | min_p(0.05)", 7).unwrap();
//!     let logits = [0.5, 1.0, 1.5, 2.0, 0.0, -1.0];
//!     insta::assert_json_snapshot!(chain.draws(&logits, &[3, 3], 20).unwrap());
//! }
//! ```
//!
//! The first run writes `tests/snapshots/*.snap.new`; review the values (`cargo insta review`,
//! or by hand) and accept them; from then on any change to what the chain does fails the
//! test. Seeds give the same draws on every machine (a portable ChaCha8 stream and a fixed
//! summation order).
#![warn(missing_docs)]

mod chain;
mod error;
pub mod outcome;

pub use chain::{draw_sequence, Chain};
pub use error::Error;
pub use outcome::Outcome;
pub use sieve_core::{BuildContext, Registry};

/// `sieve-core`: candidates, the `Sampler` trait, the registry, the pipeline.
pub use sieve_core as core;
/// `sieve-dsl`: the pipeline language.
pub use sieve_dsl as dsl;
/// `sieve-samplers`: the built-in stages.
pub use sieve_samplers as samplers;
