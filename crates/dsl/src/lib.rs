//! # sieve-dsl
//!
//! The pipeline language of sieve: text such as
//!
//! ```text
//! penalty(1.1) | temp(0.7) | top_k(40) | top_p(p=0.9) | min_p(0.05)
//! ```
//!
//! parsed (with a pest grammar) into a [`PipelineSpec`], validated against the parameter
//! schemas of a [`sieve_core::Registry`], and built into a [`sieve_core::Pipeline`]. Every
//! mistake is a [`Diagnostic`] with a line, a column and a caret-rendered form.
//!
//! ```
//! # let registry = sieve_samplers::builtin_registry();
//! // `registry`: the stages this run knows (here the built-ins of `sieve-samplers`).
//! let spec = sieve_dsl::PipelineSpec::parse("top_k(40)", &registry).unwrap();
//! assert!(spec.to_string().starts_with("top_k(k=40)"));
//! let err = sieve_dsl::PipelineSpec::parse("top_k(k=-1)", &registry).unwrap_err();
//! assert_eq!(err.kind, sieve_dsl::DiagnosticKind::OutOfRange);
//! ```
//!
//! # The language
//!
//! ```text
//! pipeline = stage ("|" stage)*
//! stage    = name ( "(" [arg ("," arg)* [","]] ")" )?
//! arg      = [name "="] value
//! value    = number | string | bool | list | map
//! ```
//!
//! Text order is run order. Whitespace (spaces, tabs, newlines) may stand between any two
//! tokens, so a pipeline may span lines.
//!
//! - **Names** are ASCII identifiers, `[A-Za-z_][A-Za-z0-9_]*`.
//! - **Numbers**: digits alone make an integer (`40`, `-3`, `+7`), which must fit in `i64`; a
//!   `.` or an exponent makes a float (`0.9`, `.5`, `5.`, `1e-5`, `2.5E3`), which must be
//!   finite; `inf`, `+inf` and `-inf` are floats. There is no `nan`. An integer is accepted
//!   where a float is expected (and becomes a float); a float is never accepted where an
//!   integer is expected.
//! - **Strings** are in double or single quotes (single quotes are handy inside a shell's
//!   double quotes), with escapes `\"` `\'` `\\` `\n` `\t` `\r` `\0` and `\u{1F600}`; any
//!   other escape is an error at its column. A string may span lines.
//! - **Booleans** are `true` and `false`.
//! - **Lists** `[v, …]` and **maps** `{key: value, …}` nest; map keys are integers or
//!   strings (`logit_bias({13: -inf, "Hello": 2.5})`). Brackets may nest at most
//!   [`MAX_NESTING`] levels deep.
//! - A **trailing comma** is allowed in argument lists, lists and maps (handy when a pipeline
//!   is written one argument per line); the canonical form never has one.
//! - **Arguments** are given by position (in the order of the stage's parameters), by name, or
//!   positionally first and then by name. A stage written without parentheses, or with empty
//!   ones, takes all its defaults.
//!
//! # Validation
//!
//! [`PipelineSpec::parse`] reports the first mistake in text order: an unknown stage (with the
//! nearest registered name when one is close: "did you mean `top_p`?"), an unknown parameter
//! (with the nearest parameter name and the list of parameters), a parameter given twice, too
//! many positional arguments, a positional argument after a named one, a value of the wrong
//! type, a number out of its parameter's range (the help line gives the range), a missing
//! required argument (pointing at the stage), and a selector (`greedy`, `dist`, mirostat)
//! followed by other stages, which could not change the token it chose.
//!
//! # Canonical form
//!
//! A [`PipelineSpec`] holds every argument by name, in schema order, with defaults filled;
//! when the last stage is not a selector, `dist` is appended with its defaults
//! (`dist(seed=-1)`). Its `Display` prints this canonical text, with values in
//! [`sieve_core::Value`]'s syntax, which prints every float so that it parses back to the same
//! bits. Parsing the canonical text with the same registry gives an identical spec.
//!
//! # Parse once, build many
//!
//! A front end that needs several copies of one pipeline (one per sequence, beam, choice, or
//! for a draft model) parses its text once into a [`Parsed`] and builds each copy from it
//! ([`Parsed::build`], [`Parsed::copies`]: copy `i` seeded `seed + i`); a constructor's error
//! still points into the text as written. Fields that are not pipeline text (an API request's)
//! become stages directly with [`PipelineSource::stages`], validated as text is. With the
//! `count-parses` feature, `parses()` counts this thread's parses, for tests that check it.
//!
//! # serde
//!
//! A [`PipelineSpec`] serializes as its canonical text. Reading one back needs the registry
//! the pipeline will run with, which this crate does not know (it knows no stage: the
//! built-ins live in `sieve-samplers`, plugins are loaded at run time), so there is no plain
//! `Deserialize` for it:
//!
//! - a configuration type holds a [`PipelineSource`] (which does implement `Deserialize`: a
//!   pipeline string, or a list of stage objects `[{"stage": "top_k", "k": 40}, {"stage":
//!   "temp", "t": 0.7}]`), and validates it once the registry is known with
//!   [`PipelineSource::resolve`];
//! - or a [`SpecSeed`]`(&registry)` deserializes and validates in one go
//!   (`serde::de::DeserializeSeed`).
//!
//! Errors name the place: the line and column for the text form, the 1-based stage index for
//! the list form (`stage 2 (`top_kk`): unknown stage …`).
//!
//! # Robustness
//!
//! Nothing a user types makes the parser panic, hang or overflow its stack: deep nesting is
//! refused by a linear pre-scan before the recursive parser runs, and parsing is linear in
//! the length of the text.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

extern crate alloc;

mod ast;
mod compile;
mod count;
mod diagnostic;
mod grammar;
mod literal;
mod parsed;
mod render;
mod scan;
mod serde_impl;
mod span;
mod spec;
mod suggest;
mod syntax;
mod syntax_error;
mod validate;

pub use compile::{compile, Compiled};
#[cfg(feature = "count-parses")]
pub use count::parses;
pub use diagnostic::{Diagnostic, DiagnosticKind};
pub use parsed::Parsed;
pub use scan::MAX_NESTING;
pub use serde_impl::{PipelineSource, SourceError, SpecSeed};
pub use span::Span;
pub use spec::{PipelineSpec, StageSpec};
