//! The request log: one line per request, written through `tracing` when its response ends
//! (a stream's last chunk, or the client leaving), with
//!
//! - `request_id`: 32 random hex digits, also sent back as the `x-request-id` header;
//! - `method`, `route` (the route's pattern, `(no route)` for a 404), `status`;
//! - `latency_ms`: from the request's arrival to its response's end;
//! - `complete`: `false` when the response did not end (the client left, or the shutdown
//!   deadline passed);
//! - `error`: the error's message, for the 4xx and 5xx answers;
//! - `tokens_in`, `tokens_out`: when a handler recorded them in the request's
//!   [`TokenCounts`].
//!
//! No body is ever logged, so no prompt or generated text. Lines of 5xx answers are at
//! level `error`, the rest at `info`; the subscriber (text or JSON, `RUST_LOG`) is the
//! binary's to install.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

use crate::body_end::{BodyEnd, Guarded};
use crate::error::ErrorMessage;
use crate::ids::random_hex;

/// The response header that carries the request's id.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Token counts a handler may record for the request's log line; found in the request's
/// extensions (`Extension<TokenCounts>`), shared with the line, so a stream can add to them
/// as it goes.
#[derive(Debug, Clone, Default)]
pub struct TokenCounts(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    recorded: AtomicBool,
    prompt: AtomicU64,
    completion: AtomicU64,
}

impl TokenCounts {
    /// Adds `prompt` prompt tokens and `completion` generated tokens.
    pub fn record(&self, prompt: usize, completion: usize) {
        self.0.prompt.fetch_add(prompt as u64, Ordering::Relaxed);
        self.0
            .completion
            .fetch_add(completion as u64, Ordering::Relaxed);
        self.0.recorded.store(true, Ordering::Relaxed);
    }

    /// `(prompt, completion)` tokens, when any were recorded.
    pub fn get(&self) -> Option<(u64, u64)> {
        self.0.recorded.load(Ordering::Relaxed).then(|| {
            (
                self.0.prompt.load(Ordering::Relaxed),
                self.0.completion.load(Ordering::Relaxed),
            )
        })
    }
}

/// The middleware: gives the request an id and its response the `x-request-id` header, and
/// logs the line when the response's body ends.
pub async fn log_request(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = random_hex();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(no route)".to_string(), |p| p.as_str().to_string());
    let tokens = TokenCounts::default();
    request.extensions_mut().insert(tokens.clone());
    let mut response = next.run(request).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let line = Line {
        id,
        method,
        route,
        status: response.status(),
        error: response
            .extensions()
            .get::<ErrorMessage>()
            .map(|m| m.0.clone()),
        tokens,
        started,
    };
    response.map(|body| {
        Body::new(Guarded::new(
            body,
            Pending {
                line: Some(line),
                ended: false,
            },
        ))
    })
}

/// What the line says, kept until the response ends.
struct Line {
    id: String,
    method: Method,
    route: String,
    status: StatusCode,
    error: Option<String>,
    tokens: TokenCounts,
    started: Instant,
}

impl Line {
    fn write(self, complete: bool) {
        let latency_ms = (self.started.elapsed().as_secs_f64() * 1e4).round() / 10.0;
        let tokens = self.tokens.get();
        macro_rules! line {
            ($level:ident) => {
                tracing::$level!(
                    request_id = %self.id,
                    method = %self.method,
                    route = %self.route,
                    status = self.status.as_u16(),
                    latency_ms,
                    complete,
                    error = self.error.as_deref(),
                    tokens_in = tokens.map(|t| t.0),
                    tokens_out = tokens.map(|t| t.1),
                    "request"
                )
            };
        }
        if self.status.is_server_error() {
            line!(error);
        } else {
            line!(info);
        }
    }
}

/// A request's line, written when its response body has been read to the end or dropped.
struct Pending {
    line: Option<Line>,
    ended: bool,
}

impl BodyEnd for Pending {
    fn ended(&mut self) {
        self.ended = true;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(line) = self.line.take() {
            line.write(self.ended);
        }
    }
}
