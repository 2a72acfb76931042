//! The one error type of `sieve-plugin`: what is wrong with data read across the ABI.

use alloc::boxed::Box;
use alloc::string::String;

use sieve_core::{ParamError, Range};

/// Why a value, schema, argument list or vocabulary read from its ABI form was refused.
///
/// The host turns these into "bad descriptor" load errors or "broke the ABI contract" stage
/// errors; the guest into [`STATUS_ABI_MISMATCH`](crate::abi::STATUS_ABI_MISMATCH).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AbiError {
    /// Bytes that should be UTF-8 text are not.
    #[error("{what} is not UTF-8: {error}")]
    NotUtf8 {
        /// What the text is (`a parameter name`, …).
        what: &'static str,
        /// Where decoding failed.
        error: core::str::Utf8Error,
    },
    /// A value tree nested deeper than [`MAX_DEPTH`](crate::value::MAX_DEPTH).
    #[error("values nested deeper than {}", crate::value::MAX_DEPTH)]
    TooDeep,
    /// A string, list or map value with a length but a null pointer.
    #[error("value of kind {kind} has a null pointer")]
    NullValue {
        /// The value's kind tag.
        kind: u32,
    },
    /// A boolean value other than 0 or 1.
    #[error("boolean value {0} is neither 0 nor 1")]
    NotABool(i64),
    /// A kind tag this version does not know.
    #[error("unknown value kind {0}")]
    UnknownKind(u32),
    /// A length whose element count does not fit in `usize`.
    #[error("{0} overflows")]
    Overflow(&'static str),
    /// The argument array is null but not empty.
    #[error("null argument array")]
    NullArguments,
    /// One argument could not be decoded.
    #[error("argument `{name}`: {source}")]
    Argument {
        /// The argument's name.
        name: String,
        /// What is wrong with its value.
        source: Box<AbiError>,
    },
    /// A parameter name that cannot be written in a pipeline.
    #[error("parameter name {0:?} is not an identifier (letters, digits, `_`; not starting with a digit)")]
    NotAnIdentifier(String),
    /// A parameter kind tag this version does not know.
    #[error("parameter `{name}` has unknown kind {kind}")]
    UnknownParamKind {
        /// The parameter.
        name: String,
        /// The tag.
        kind: u32,
    },
    /// A range with NaN bounds or `min > max`.
    #[error("parameter `{name}` has an invalid range {range}")]
    InvalidRange {
        /// The parameter.
        name: String,
        /// The range.
        range: Range,
    },
    /// A default value that cannot be decoded.
    #[error("parameter `{name}`: default: {source}")]
    BadDefault {
        /// The parameter.
        name: String,
        /// What is wrong with it.
        source: Box<AbiError>,
    },
    /// A default value its own parameter refuses.
    #[error("parameter `{name}`: default: {source}")]
    DefaultRefused {
        /// The parameter.
        name: String,
        /// Why the schema refuses it.
        source: ParamError,
    },
    /// A vocabulary descriptor smaller than this version's.
    #[error("the vocabulary descriptor is {found} bytes, expected at least {expected}")]
    VocabTooSmall {
        /// Its `struct_size`.
        found: usize,
        /// The size this version knows.
        expected: usize,
    },
    /// A vocabulary descriptor with a null array.
    #[error("the vocabulary descriptor has a null array")]
    VocabNullArray,
    /// Vocabulary offsets that do not start at 0 or decrease.
    #[error("the vocabulary offsets are not non-decreasing from 0")]
    VocabOffsets,
}
