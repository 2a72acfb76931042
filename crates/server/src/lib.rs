//! # sieve-server
//!
//! `sieve serve`: an OpenAI-compatible HTTP server (axum + tokio) on sieve's continuous-
//! batching [`Scheduler`](sieve_engine::Scheduler), where every request may bring its own
//! sampler pipeline.
//!
//! ```text
//!  HTTP ─► routes ─► body (JSON, 413 past the limit) ─► openai::* fields (400 naming the field)
//!             │                                   │
//!             │          sampling: fields → pipeline text ─► sieve_dsl::compile (per choice: seed + i)
//!             ▼                                   ▼
//!  generation::prepare (model, prompt, n, limits, logprobs) ─► submit ─► Scheduler (model thread)
//!             ▲                                                               │
//!  collect (one JSON) / stream (SSE chunks, usage, [DONE]) ◄── Event::Token / Finished / Failed
//! ```
//!
//! - [`routes`]: one handler per route, the router, the API-key check, the `Host`/`Origin`
//!   checks and CORS;
//! - [`connections`]: the accept loop, with its timeouts, its bound on connections and the
//!   shutdown deadline; [`log`]: one line per request;
//! - [`openai`]: OpenAI's request and response types;
//! - [`sampling`]: request fields → pipeline, in a documented order;
//! - [`generation`]: shared validation, submission, whole and streamed responses;
//! - [`body`]: JSON bodies with the size limit; [`metrics`]: Prometheus text;
//! - [`state`]: what the handlers share; [`Error`]: every error, answered in OpenAI's shape.
//!
//! The model's loading, the stage registry (built-ins and plugins) and the command line live
//! in `sieve-cli` (`sieve serve`), which builds an [`AppState`] and calls [`serve`].
#![warn(missing_docs)]

pub mod body;
mod body_end;
pub mod connections;
mod error;
pub mod generation;
mod ids;
pub mod log;
pub mod metrics;
pub mod openai;
pub mod origins;
pub mod routes;
mod run;
pub mod sampling;
pub mod state;
pub mod tool_choice;
pub mod tools;
pub mod work;

use std::future::Future;

pub use connections::ConnectionLimits;
pub use error::{Error, ErrorBody, ErrorMessage, ErrorObject, Result, RETRY_AFTER_SECONDS};
pub use routes::router;
pub use run::run;
pub use sampling::Defaults;
pub use state::{AppState, ModelText, Settings};

/// Serves `state` on `listener` until `shutdown` completes, then lets running requests end
/// for `state.settings.connections.shutdown` and closes the connections left (see
/// [`connections`]).
///
/// # Errors
/// [`Error::Io`] when serving fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let limits = state.settings.connections;
    connections::serve_router(listener, router(state), limits, shutdown).await?;
    Ok(())
}
