//! One module per command, each owning its flags (a clap `Args` struct) and its `run`.
//!
//! | command | module |
//! |---|---|
//! | `sieve check "<pipeline>"` | [`check`] |
//! | `sieve samplers [--json]` | [`samplers`] |
//! | `sieve apply --sampler P (--logits L \| --probs L) …` | [`apply`] |
//! | `sieve generate [--model DIR] --prompt TEXT …` | [`generate`] |
//! | `sieve compare --sampler A --sampler B … --prompt TEXT …` | [`compare`] |
//! | `sieve logits --model DIR (--prompt TEXT \| --tokens IDS) …` | [`logits`] |
//! | `sieve bench sampler …`, `sieve bench model …` | [`bench`](mod@bench) |
//! | `sieve serve [--model DIR] [--port P] …` | [`serve`] |
//! | `sieve chat [--model M] [--system T] [--sampler P] …` | [`chat`] |
//! | `sieve quantize IN OUT.gguf --type TYPE` | [`quantize`] |
//!
//! Commands that build a pipeline receive the run's one [`sieve_core::Registry`] (built by
//! [`crate::pipeline::registry`]); none keeps state between runs.

pub mod apply;
pub mod bench;
pub mod chat;
pub mod check;
pub mod compare;
pub mod generate;
pub mod logits;
pub mod quantize;
pub mod samplers;
pub mod serve;
pub mod template;
