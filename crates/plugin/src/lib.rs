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
//!    stage's seed. The full attribute reference (`flatten`, the default's type, how doc
//!    lines join, what is refused at compile time) is on [`derive@Params`]. Name the struct
//!    after its stage (`MineParams`), never `Params`: that name is the trait's and the
//!    derive's, and the derive refuses it;
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
//!   kernels above vectorize 8 lanes wide only then. They choose their code when they are
//!   *compiled* (`cfg(target_feature = "avx2")`), not at run time, so the flags of the build
//!   decide. Cargo reads `.cargo/config.toml` from the **current directory** (and its
//!   parents), not from the crate's, and a `RUSTFLAGS` variable replaces its flags: a
//!   `cargo build --manifest-path mine/Cargo.toml` run from elsewhere, or any `RUSTFLAGS`,
//!   built a plugin with no AVX2 code at all, 1.8× slower. Build from the crate's directory,
//!   or pass the flags where no directory can lose them: `RUSTFLAGS="-C
//!   target-cpu=x86-64-v3"` or `--config 'build.rustflags=["-C", "target-cpu=x86-64-v3"]'`.
//!   (sieve's model kernels, `sieve-kernels`, detect AVX2/AVX-512 at run time instead; the
//!   sampler math shared with plugins does not, so that a stage's results never depend on
//!   the machine it runs on beyond the build's flags.) `plugins/template` has a build script
//!   that warns when an x86-64 build lacks AVX2.
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
//!   `Context::default()`), and end to end with `sieve apply --trace`. [`testing`] has the
//!   two one-line helpers: [`testing::build`] builds it through [`Stage::new`] (an inherent
//!   `new` on the type would win over the trait's in `Mine::new(…)`), and
//!   [`testing::check_descriptor`] checks its descriptor with the host's own check (what
//!   would otherwise refuse the library only when `sieve` loads it). [`Error`] and
//!   [`ParamError`] are here to match on, not only `.is_err()`.
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
//! # Migrating from the first plugin API (`sieve_core::plugin`)
//! Plugins written before this crate existed depended on `sieve-core` (feature `std`) and
//! `serde`. The ABI did not change (still v1): a library built then keeps loading. To rebuild
//! one against this crate:
//!
//! | before | now |
//! |---|---|
//! | dependencies `sieve-core` (feature `std`) and `serde` | `sieve-plugin` alone |
//! | `use sieve_core::plugin::PluginStage;` and `sieve_core::…` types | `use sieve_plugin::{Stage, …};` (the same types, re-exported) |
//! | `impl PluginStage for Mine` | `impl Stage for Mine` — the trait built-in stages implement |
//! | `fn create(p: Self::Params, cx)` | `fn new(p: Self::Params, cx)` |
//! | `fn params() -> Vec<ParamSpec>` (the schema, written by hand) | gone: the schema comes from the parameter struct |
//! | `#[derive(Deserialize)] struct Params { … }` | `#[derive(sieve_plugin::Params)] struct MineParams { … }`: one `///` doc per field, `#[param(default = …, range = …)]` for what `ParamSpec::float/int(…)` said; not named `Params` |
//! | `fn name(&self) -> &str` in `impl Sampler` | gone: the name is `Stage::NAME` only |
//! | `sieve_core::export_plugin!(…)` | `sieve_plugin::export_plugin!(…)`, same arguments |
//! | `sieve_core::plugin::abi` | [`abi`] |
//!
//! `NAME`, `DOC` and `SELECTOR` keep their meaning; `Sampler::apply`, `accept` and `reset` are
//! unchanged. The template's first and second versions side by side are commits `c135558^`
//! and `c135558` of `plugins/template/src/lib.rs` in the sieve repository.
//!
//! # Modules
//! - [`abi`]: the `#[repr(C)]` types, symbol names and status codes;
//! - [`value`], [`schema`], [`vocab`]: Rust values to and from their ABI form (both sides use
//!   them);
//! - [`descriptor`]: reading and checking a library's descriptor, the one check the host
//!   runs when it loads a plugin;
//! - [`guest`] (feature `std`): the author's side, used by [`export_plugin!`];
//! - [`testing`] (feature `std`): helpers for a plugin's tests.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

extern crate alloc;
// Lets `#[derive(Params)]`'s `::sieve_plugin::…` paths resolve inside this crate too.
extern crate self as sieve_plugin;

pub mod abi;
pub mod descriptor;
mod error;
mod export;
#[cfg(feature = "std")]
pub mod guest;
pub mod schema;
#[cfg(feature = "std")]
pub mod testing;
pub mod value;
pub mod vocab;

pub use abi::ABI_VERSION;
pub use error::AbiError;

pub use sieve_core::stage::Params;
pub use sieve_core::{
    math, Args, BuildContext, Candidates, Context, Error, ParamError, ParamKind, ParamSpec,
    ParamType, Range, Sampler, Seed, SieveRng, Value, Vocab, MAX_SEED,
};

/// **For plugin authors: call `Stage::new` through the trait in tests.** An inherent
/// `fn new(…)` on the stage type compiles beside [`Stage::new`] and is the one `Mine::new(…)`
/// calls (inherent methods win over trait methods), so a test that writes `Mine::new` does
/// not build the stage the way `sieve` does. Write
/// [`testing::build::<Mine>(params, &cx)`](testing::build) (or `<Mine as Stage>::new`), or
/// give the inherent constructor another name.
///
/// ---
#[doc(inline)]
pub use sieve_core::Stage;

/// `#[derive(Params)]`: a stage's parameter schema and the reading of its validated
/// arguments, written from a struct with named fields.
///
/// ```
/// use sieve_plugin::{Params, Range, Seed};
///
/// #[derive(Params)]
/// pub struct MineParams {
///     /// added to the logit of `token`;
///     /// may be negative
///     #[param(default = 1.0, range = Range::closed(-100.0, 100.0))]
///     pub bias: f32,
///     /// the token id
///     #[param(range = Range::closed(0.0, u32::MAX as f64))]
///     pub token: u32,
///     pub seed: Seed,
/// }
/// let schema = MineParams::schema();
/// assert_eq!(schema[0].doc, "added to the logit of `token`; may be negative");
/// assert!(schema[1].default.is_none()); // required
/// ```
///
/// # Fields
/// - The field name is the parameter name (a raw identifier loses its `r#`), the field order
///   the positional order (`mine(2.5, 13)`).
/// - The `///` doc is the parameter's one-line doc in `sieve samplers`: its lines are trimmed,
///   empty lines dropped, and the rest joined by one space. **Required**: a field without one
///   is a compile error naming it, except a [`Seed`] field (its type brings its doc).
/// - Field types and the kinds they map to ([`ParamType`]): `f64`/`f32` → float,
///   `usize`/`u32`/`i64` → int, `bool`, `String` → str, `Vec<Value>` → list,
///   `Vec<(Value, Value)>` → map (in written order), [`Seed`] → int (default `-1`, range
///   `[-1, 2^53]`).
///
/// # `#[param(…)]`
/// - `default = EXPR`: makes the parameter optional. `EXPR` has the type
///   `<FieldType as ParamType>::Default`: **`f64` for float fields (also `f32`, so
///   `default = 0.05` is the `f64` 0.05, exactly as `sieve check` prints it), `i64` for the
///   integer fields and `Seed`**, the field type otherwise; a string literal for a `String`
///   field. Without `default` the parameter is *required* (a [`Seed`] defaults to `-1`).
/// - `range = EXPR`: the valid interval, a [`Range`] expression (`Range::closed(0.0, 1.0)`,
///   `Range::open`, `Range::at_least`, `Range::greater_than`) evaluated where the struct is
///   defined. Numbers outside it are refused before [`Stage::new`] runs.
/// - `flatten`: the field's type is itself a `#[derive(Params)]` struct whose parameters are
///   spliced in at this place (parameters several stages share); its own `default`, `range`
///   and `///` are not used.
///
/// # Compile-time checks
/// - A struct named `Params` is refused: it would clash with this derive and the trait
///   [`Params`] that `use sieve_plugin::Params` brings in. Name it after its stage
///   (`MineParams` for `Mine`). rustc's own "the name `Params` is defined multiple times"
///   (E0255) is printed just before the derive's message (it is reported before any derive
///   runs), and the uses of the name (`type Params = Params;`) fail after it.
/// - A field without `///` (see above).
/// - A literal default outside a literal range (`default = 1.5, range = Range::closed(0.0,
///   1.0)`): the host would refuse the library when loading it. A default or range that is not
///   a literal (a constant, `u32::MAX as f64`) is not evaluated by the derive; check it with
///   [`testing::check_descriptor`], which runs the host's own check.
///
/// The derive implements [`Params`] through `::sieve_plugin::__private` paths only, so it
/// needs no other import and works in any module.
#[doc(inline)]
pub use sieve_macros::PluginParams as Params;

/// What the code `#[derive(Params)]` writes refers to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use sieve_core::__private::*;
}
