//! The pest parser generated from `grammar.pest`, and its `Rule`s.
// pest_derive writes the `Rule` enum without docs.
#![allow(missing_docs)]

/// The pest parser generated from `grammar.pest`.
#[derive(pest_derive::Parser)]
#[grammar = "grammar.pest"]
pub(crate) struct Grammar;

/// The characters the grammar skips between tokens.
pub(crate) const WHITESPACE: [char; 4] = [' ', '\t', '\r', '\n'];
