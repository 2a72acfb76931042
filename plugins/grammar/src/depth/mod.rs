//! Bounds checked on a grammar before llguidance compiles it, so that no grammar can
//! overflow the compiling thread's stack (which would abort the whole process: a server and
//! every request in it).
//!
//! llguidance compiles recursively: following a chain of `$ref`s, nested `properties`,
//! `anyOf`/`allOf` branches, or Lark rules that name the next rule costs 2–10 KB of stack per
//! level in a release build and up to ~50 KB in a debug build (measured on llguidance 1.9.1:
//! a 2 MiB stack, a tokio worker's, overflowed at ~600 chained `$ref`s, ~250 `anyOf` levels and
//! ~670 chained Lark rules). So:
//!
//! - the grammar's text is at most [`MAX_GRAMMAR_BYTES`] (checked as it is read, in
//!   [`crate::source`]);
//! - a JSON schema's depth ([`schema_depth`]: objects and arrays on the heaviest path, `$ref`s
//!   followed) is at most [`MAX_SCHEMA_DEPTH`];
//! - a Lark grammar's depth ([`lark_depth`]: definitions on the heaviest path, plus the
//!   deepest `%json` schema in it) is at most [`MAX_LARK_DEPTH`];
//! - regular expressions need no bound of ours: llguidance refuses nesting past its own limit;
//! - and the compilation runs on a thread of its own with [`COMPILE_STACK_BYTES`] of stack,
//!   several times what the deepest grammar these bounds let through needs even unoptimized
//!   (the tests compile grammars at each bound).
//!
//! Both measures count a cycle (a recursive schema or grammar) as all of its nodes, so they
//! bound every order llguidance may walk the grammar in, and they are computed without
//! recursion.

mod graph;
mod lark;
mod schema;

pub use lark::lark_depth;
pub use schema::schema_depth;

use sieve_plugin::Error;

#[doc(no_inline)]
pub use crate::source::MAX_GRAMMAR_BYTES;
use crate::source::{invalid, Source};

/// The deepest JSON schema accepted, as [`schema_depth`] measures it. Real schemas are a few
/// dozen deep; this leaves room for large recursive ones.
pub const MAX_SCHEMA_DEPTH: usize = 1024;

/// The deepest Lark grammar accepted, as [`lark_depth`] measures it (a grammar of several
/// hundred mutually recursive rules fits).
pub const MAX_LARK_DEPTH: usize = 2048;

/// The stack of the thread that compiles a grammar. Only the pages a compilation touches are
/// ever used; the rest is address space.
pub const COMPILE_STACK_BYTES: usize = 256 << 20;

/// Refuses a grammar deeper than its kind's bound; `param` names the argument in the error.
///
/// # Errors
/// [`Error::InvalidArgument`] on `param`, giving the depth found and the limit.
pub fn check_depth(param: &str, source: &Source) -> Result<(), Error> {
    let (depth, limit, what) = match source {
        Source::JsonSchema(schema) => (
            schema_depth(schema),
            MAX_SCHEMA_DEPTH,
            "the JSON schema nests objects, arrays and `$ref`s",
        ),
        Source::Lark(text) => (
            lark_depth(text),
            MAX_LARK_DEPTH,
            "the Lark grammar chains rules (with the `%json` schemas in them)",
        ),
        Source::Regex(_) => return Ok(()),
    };
    if depth > limit {
        return Err(invalid(
            param,
            format!(
                "{what} {depth} levels deep; at most {limit} are accepted (a chain of \
                 references this long would exhaust the compiler's stack)"
            ),
        ));
    }
    Ok(())
}
