//! The pipeline as written, with spans: what the parser produces and the validator checks.

use alloc::string::String;
use alloc::vec::Vec;

use sieve_core::Value;

use crate::span::Span;

/// One stage as written: `top_p(0.9, min_keep=2)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stage {
    /// The stage name.
    pub name: String,
    /// Where the name is.
    pub name_span: Span,
    /// The whole stage, name to closing parenthesis.
    pub span: Span,
    /// The arguments in written order.
    pub args: Vec<Arg>,
}

/// One argument as written: `0.9` or `min_keep=2`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Arg {
    /// The parameter name and its span, for a named argument.
    pub name: Option<(String, Span)>,
    /// The value.
    pub value: Value,
    /// Where the value is.
    pub value_span: Span,
    /// The whole argument (name, `=` and value).
    pub span: Span,
}
