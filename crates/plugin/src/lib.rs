//! # sieve-plugin
//!
//! Everything a sieve **sampler plugin** needs, and the only dependency its crate adds: a
//! plugin is a Rust `cdylib` whose stages `sieve` loads at run time (`--plugin libx.so`) and
//! uses in pipelines like its built-in stages, without being rebuilt.
//!
//! # Writing a plugin
//! A plugin stage is written exactly like a built-in stage of `sieve-samplers`:
//!
//! 1. a parameter struct with `#[derive(Params)]`: each field is one parameter (the field name
//!    is the name used in pipelines, its `///` doc the line `sieve samplers` shows, the field
//!    order the positional order); `#[param(default = …)]` makes it optional,
//!    `#[param(range = …)]` gives its valid [`Range`]; a field without a default is
//!    *required*. Field types: `f64`/`f32` (float), `usize`/`u32`/`i64` (int), `bool`,
//!    `String`, `Vec<Value>` (list), `Vec<(Value, Value)>` (map), and [`Seed`] for a random
//!    stage's seed;
//! 2. the stage type, implementing [`Sampler`] (`apply`, and `accept`/`reset` if it keeps
//!    state) and [`Stage`] (`NAME`, `DOC`, `SELECTOR`, `type Params`, `new`);
//! 3. one line exporting the library: [`export_plugin!`]
//!    (`sieve_plugin::export_plugin!(name = "mine", version = "0.1.0", stages = [Mine]);`).
//!
//! [`export_plugin!`] shows a whole plugin; `plugins/template` in the sieve repository is one
//! with a walkthrough (a standalone crate, how to build it, install it and debug it).
//!
//! **Names.** A stage has one name, [`Stage::NAME`]: the name written in pipelines, shown by
//! `sieve samplers` and used in error messages. The `name` and `version` given to
//! [`export_plugin!`] describe the *library*; `sieve samplers` shows them beside each stage.
//! A plugin stage may not take a name a built-in or another loaded plugin already has.
//!
//! **Parameters** arrive checked: the host validates every pipeline against the schema
//! derived from your struct (types, ranges, required parameters, defaults filled) before
//! `new` runs, so `new` only checks what the schema cannot express, returning
//! [`Error::InvalidArgument`] (through [`Args::invalid`]-style errors naming the parameter)
//! so the diagnostic points at it.
//!
//! **Seeds.** A random stage has a `seed: Seed` field (default `-1`, range `[-1, 2^53]`) and
//! calls `params.seed.resolve(cx.seed)` in `new`: `-1` becomes the run's seed (`--seed`, the
//! request's seed), any other value is used as is. [`SieveRng`] is the portable generator the
//! built-in stages use.
//!
//! **Probabilities.** [`Candidates`] holds ids and logits; a stage that needs probabilities
//! asks for them rather than computing its own softmax:
//! - [`Candidates::softmax`]: `p_i = e^(l_i − max) / Σ e^(l_j − max)`, computed once and cached
//!   until the logits change (masked candidates get 0);
//! - [`Candidates::weights`]: the unnormalized weights `e^(l_i − max)` and their sum (the
//!   normalizer), what a selector needs to draw without a normalizing pass;
//! - [`Candidates::cached_probs`]: the cached values, if any;
//! - [`math`]: the vectorized kernels behind them (`max`, `exp`, `exp_shifted_into`, `sum`),
//!   for stages that work on logit slices.
//!
//! Logits are never NaN or `+inf` inside a pipeline ([`math::sanitize`] is how they are read,
//! also when your stage hands candidates back); `-inf` marks a masked token.
//!
//! # Building, installing, debugging
//! - Build with `cargo build --release` as a `cdylib` (`crate-type = ["cdylib"]`), with the
//!   CPU flags sieve uses (`-C target-cpu=x86-64-v3` on x86-64, in `.cargo/config.toml`): the
//!   kernels above vectorize 8 lanes wide only then.
//! - Never build a plugin with `panic = "abort"`: [`export_plugin!`] refuses it at compile
//!   time, because a panic could not be caught and would end `sieve` without a message.
//! - Load it with `--plugin target/release/libmine.so` on `sieve check`, `samplers`, `apply`,
//!   `bench sampler` and `generate`, or install it in a directory listed in
//!   `SIEVE_PLUGIN_PATH`. An explicit `--plugin` wins over a library found on
//!   `SIEVE_PLUGIN_PATH` that defines the same stage (sieve notes it on stderr), so a
//!   development build can shadow an installed copy.
//! - Failures: a panic or an error in `new` is a bad pipeline (exit code 2, the message names
//!   the stage, the file and, for a panic, its location); in `apply` a runtime failure (exit
//!   code 1). A stage that panicked is *poisoned* until `reset`.
//! - Test the stage as an ordinary Rust type in `#[cfg(test)]` (`Candidates::from_logits`,
//!   `Context::default()`), and end to end with `sieve apply --trace`.
//!
//! # Compatibility
//! A plugin built against an earlier sieve with the same [`ABI_VERSION`] keeps loading: the
//! layout below only grows by appending fields, behind `struct_size` checks.
//!
//! # The protocol (ABI v1)
//! A plugin library exports two symbols:
//!
//! - `uint32_t sieve_plugin_abi_version(void)` — the [`ABI_VERSION`] it was built for. The
//!   host calls it first and refuses any other version before reading anything else.
//! - `const AbiPlugin *sieve_plugin_entry(const ErrorSink *err)` ([`abi::EntryFn`]) — the
//!   descriptor: plugin name and version, and an array of [`abi::AbiStage`]: per stage its
//!   name, one-line doc, parameter schema ([`abi::AbiParam`], mirroring
//!   [`ParamSpec`]: name, kind, default, range, doc), selector flag, and
//!   five functions. The descriptor must stay valid and unchanged while the library is
//!   loaded, which is until the process ends: the host never unloads a plugin.
//!
//! The stage functions (see [`abi`] for the exact signatures):
//!
//! | function | receives | returns |
//! |---|---|---|
//! | `create` | the validated arguments ([`abi::AbiArg`]: name + [`abi::AbiValue`] tree; every parameter of the schema, defaults filled), [`abi::AbiBuild`] (run seed; vocabulary or null) | an opaque state, or null |
//! | `apply` | the state, [`abi::AbiCandidates`] (ids + logits, edited in place, may shrink; `len` is set to the new count, `selected` to the chosen position for selectors), [`abi::AbiStep`] (history, prompt length, step) | a status |
//! | `accept` | the state, the chosen token | a status |
//! | `reset` | the state | a status |
//! | `destroy` | the state | — |
//!
//! **Versioning and layout.** Every struct one side fills and the other reads starts with a
//! `struct_size` field, which the reader checks (at least the size it knows) before reading
//! further, as llguidance does; arrays of such structs have the first element's
//! `struct_size` as stride. A change that keeps old readers working (a field appended) keeps
//! the version; any other change bumps [`ABI_VERSION`].
//!
//! **Values.** An argument is an [`abi::AbiValue`] tree: a kind tag with an `i64`, an `f64`
//! (so `inf`/`-inf` and every float cross bit for bit), UTF-8 bytes with a length (so `"\0"`
//! crosses), or an array of values (lists; maps as key/value pairs in written order). It is
//! the same tree as [`Value`], so nothing is lost or re-parsed ([`value`]).
//!
//! **Vocabulary.** [`abi::AbiVocab`]: every token's bytes concatenated with `n + 1` offsets,
//! the EOS ids and the size. Absent (null) when no tokenizer is loaded (`sieve apply`,
//! `sieve check`).
//!
//! **Candidates.** While the host's candidates are still *dense* (token `i` at position `i`,
//! the whole vocabulary) `ids` is null, and a stage that keeps a subset writes the kept ids to
//! `ids_out`; this saves writing `n` ids on every full-vocabulary step. The host marks the
//! returned candidates unsorted, reads NaN logits as `-inf` and `+inf` as `f32::MAX`, and
//! checks `len` and `selected` are in range.
//!
//! **Errors.** Every function reports failure through the host's [`abi::ErrorSink`]: a status
//! code ([`abi::STATUS_FAILED`], [`abi::STATUS_INVALID_ARGUMENT`] with the parameter name,
//! [`abi::STATUS_PANICKED`], …) and a message, which the host copies during the call (the
//! plugin keeps ownership of its strings, so no free function is needed). `accept` and
//! `reset` cannot fail in the [`Sampler`] trait, so the host reports their
//! errors at the next `apply`.
//!
//! **Panics.** Nothing may unwind across the boundary: [`export_plugin!`]
//! runs every function under `catch_unwind` and turns a panic into
//! [`abi::STATUS_PANICKED`] with its message and location.
//!
//! **Threads.** `create` may be called from any thread, also concurrently. A state is used by
//! one call at a time but may move between threads (a stage is `Send`).
//!
//! # Hosting plugins
//! `sieve-plugin-host` loads plugin libraries (the command line uses it); this crate is the
//! guest side and the shared ABI.
//!
//! # Modules
//! - [`abi`]: the `#[repr(C)]` types, symbol names and status codes;
//! - [`value`], [`schema`], [`vocab`]: Rust values to and from their ABI form (both sides use
//!   them);
//! - [`guest`] (feature `std`): the author's side, used by [`export_plugin!`].
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

extern crate alloc;
// Lets `#[derive(Params)]`'s `::sieve_plugin::…` paths resolve inside this crate too.
extern crate self as sieve_plugin;

pub mod abi;
mod error;
mod export;
#[cfg(feature = "std")]
pub mod guest;
pub mod schema;
pub mod value;
pub mod vocab;

pub use abi::ABI_VERSION;
pub use error::AbiError;

pub use sieve_core::stage::Params;
pub use sieve_core::{
    math, Args, BuildContext, Candidates, Context, Error, ParamKind, ParamSpec, ParamType, Range,
    Sampler, Seed, SieveRng, Stage, Value, Vocab, MAX_SEED,
};
/// `#[derive(Params)]`: a stage's parameter schema and argument reading, from a struct (see
/// the [crate docs](crate) and [`Params`]).
pub use sieve_macros::PluginParams as Params;

/// What the code `#[derive(Params)]` writes refers to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use sieve_core::__private::*;
}
