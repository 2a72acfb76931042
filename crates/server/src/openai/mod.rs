//! OpenAI's request and response types (serde), one file per endpoint family, and the
//! fields every generation request shares.

pub mod chat;
pub mod common;
pub mod completions;
pub mod fields;
pub mod models;
