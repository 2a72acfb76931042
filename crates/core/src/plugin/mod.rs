//! Sampler plugins: stages in a shared library (a Rust `cdylib`), loaded at run time with
//! `--plugin path/to/libx.so` and used in pipelines like built-ins.
//!
//! Rust has no stable ABI, so the boundary is `extern "C"` functions and `#[repr(C)]` structs
//! ([`abi`]), versioned by [`ABI_VERSION`]. Nothing Rust-specific (trait objects, `Vec`,
//! `String`, `Result`, panics) crosses it.
//!
//! # Writing a plugin
//! Depend on `sieve-core` (feature `std`) and `serde`, implement [`Sampler`](crate::Sampler)
//! and [`PluginStage`] for your stage, and export the library with one line:
//! ```text
//! sieve_core::export_plugin!(name = "mine", version = "0.1.0", stages = [Mine]);
//! ```
//! ([`export_plugin!`](crate::export_plugin) shows a complete plugin.)
//! `plugins/template` in the sieve repository is a complete plugin with a walkthrough.
//! Parameters arrive validated against the schema [`PluginStage::params`] declares, and are
//! read into the `#[derive(Deserialize)]` type [`PluginStage::Params`] through the serde
//! [`Deserializer`](serde::Deserializer) that `&Args` and `&Value` implement ([`de`]).
//!
//! # The protocol (ABI v1)
//! A plugin library exports two symbols:
//!
//! - `uint32_t sieve_plugin_abi_version(void)` — the [`ABI_VERSION`] it was built for. The
//!   host calls it first and refuses any other version before reading anything else.
//! - `const AbiPlugin *sieve_plugin_entry(const ErrorSink *err)` ([`abi::EntryFn`]) — the
//!   descriptor: plugin name and version, and an array of [`abi::AbiStage`]: per stage its
//!   name, one-line doc, parameter schema ([`abi::AbiParam`], mirroring
//!   [`ParamSpec`](crate::ParamSpec): name, kind, default, range, doc), selector flag, and
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
//! the same tree as [`Value`](crate::Value), so nothing is lost or re-parsed ([`value`]).
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
//! `reset` cannot fail in the [`Sampler`](crate::Sampler) trait, so the host reports their
//! errors at the next `apply`.
//!
//! **Panics.** Nothing may unwind across the boundary: [`export_plugin!`](crate::export_plugin)
//! runs every function under `catch_unwind` and turns a panic into
//! [`abi::STATUS_PANICKED`] with its message and location.
//!
//! **Threads.** `create` may be called from any thread, also concurrently. A state is used by
//! one call at a time but may move between threads (a stage is `Send`).
//!
//! # Hosting plugins (feature `host`)
//! [`host::Plugin::load`] opens a file, checks it and returns its stages as
//! [`StageEntry`](crate::StageEntry)s to register in a [`Registry`](crate::Registry), with
//! the file as each stage's origin.
//!
//! # Modules
//! - [`abi`]: the `#[repr(C)]` types, symbol names and status codes;
//! - [`value`], [`schema`], [`vocab`]: Rust values to and from their ABI form;
//! - [`de`]: serde deserialization of [`Value`](crate::Value) and [`Args`](crate::Args);
//! - [`guest`] (feature `std`): the author's side, used by [`export_plugin!`](crate::export_plugin);
//! - [`host`] (feature `host`): loading.

pub mod abi;
pub mod de;
mod export;
#[cfg(feature = "std")]
pub mod guest;
#[cfg(feature = "host")]
pub mod host;
pub mod schema;
pub mod value;
pub mod vocab;

pub use abi::ABI_VERSION;
pub use de::{from_args, from_value, DeError};
#[cfg(feature = "std")]
pub use guest::PluginStage;

#[cfg(all(test, feature = "host"))]
mod tests;
