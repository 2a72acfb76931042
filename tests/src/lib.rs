//! # sieve-tests
//!
//! Cross-crate tests of sieve. The tests themselves live in `tests/` (one file per subject:
//! chain snapshots, seeded sequences, diagnostics, properties); this library holds what they
//! share:
//!
//! - [`logits`]: the logit fixtures (`peaked`, `flat`, `ties`, `neg_inf`, `nan`, `zipf50k`),
//!   generated in code from fixed seeds so nothing large is committed;
//! - [`run`]: building a pipeline from its text with the built-in registry, and running one
//!   step or a seeded sequence of steps;
//! - [`survivors`]: the candidates left after a step, with probabilities renormalized over
//!   them, and their stable text form for snapshots;
//! - [`sig`]: floats printed to six significant digits;
//! - [`splitmix`]: the small deterministic generator behind the fixtures;
//! - [`fuzz`]: the pipeline fuzzer (the `fuzz` example, and the smoke test every `cargo test`
//!   runs).
#![warn(missing_docs)]

pub mod fuzz;
pub mod logits;
pub mod run;
pub mod sig;
pub mod splitmix;
pub mod survivors;
