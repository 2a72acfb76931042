//! One handler per route, and the router that joins them (with the body limit, the API-key
//! check and OpenAI-shaped 404 and 405 answers).

pub mod chat;
pub mod completions;
pub mod health;
pub mod models;
mod tokens;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;
use crate::Error;

/// The server's routes.
pub fn router(state: AppState) -> Router {
    let limit = state.settings.max_body_bytes;
    Router::new()
        .route("/v1/completions", post(completions::completions))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/models", get(models::models))
        .route("/tokenize", post(models::tokenize))
        .route("/detokenize", post(models::detokenize))
        .route("/health", get(health::health))
        .route("/metrics", get(health::metrics))
        .fallback(no_route)
        .layer(middleware::from_fn_with_state(state.clone(), api_key))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// 404 (or 405 for a known path with another method) in OpenAI's shape.
async fn no_route(method: Method, uri: axum::http::Uri) -> Error {
    Error::NoRoute(format!("{method} {}", uri.path()))
}

/// With `--api-key`, every route but `/health` and `/metrics` needs
/// `Authorization: Bearer <key>` (401 otherwise).
async fn api_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let open = matches!(request.uri().path(), "/health" | "/metrics");
    if let Some(key) = state.settings.api_key.as_deref().filter(|_| !open) {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), key.as_bytes())) {
            return Error::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

/// Compares two byte strings in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn keys_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }
}
