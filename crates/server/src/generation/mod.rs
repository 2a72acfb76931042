//! From validated request fields to events and back, in the order a request goes, one file
//! for each step:
//!
//! - `prepare.rs`: [`prepare`] checks the fields both endpoints share and the bounds of the
//!   prompt and the response, then (`pipelines.rs`) builds one pipeline per choice;
//! - `submit.rs`: [`submit`] hands the request to the scheduler and keeps its metrics and
//!   token counts as events arrive;
//! - `respond.rs`: [`collect`] (a whole response) or [`stream()`] (server-sent events) turn
//!   the scheduler's events into output.

mod pipelines;
mod prepare;
mod respond;
mod submit;

pub use pipelines::refuse_server_files;
pub use prepare::{
    check_model, check_prompt_text, prepare, Prepared, PromptParam, MAX_RESPONSE_TOKENS,
};
pub use respond::{collect, stream, ChoiceOutput, Chunks};
pub use submit::{submit, Meta, Submitted};
