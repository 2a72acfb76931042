//! One handler per route, and the router that joins them, with its layers, outermost
//! first: the body limit, the request log ([`crate::log`]), the `Host`/`Origin` checks and
//! CORS ([`guard`]), the API-key check ([`auth`]); and OpenAI-shaped 404 and 405 answers.

pub mod auth;
pub mod chat;
pub mod completions;
pub mod guard;
pub mod health;
pub mod models;
mod tokens;

use axum::extract::DefaultBodyLimit;
use axum::http::Method;
use axum::middleware;
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
        .method_not_allowed_fallback(wrong_method)
        .layer(middleware::from_fn_with_state(state.clone(), auth::api_key))
        .layer(middleware::from_fn_with_state(state.clone(), guard::guard))
        .layer(middleware::from_fn(crate::log::log_request))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// 404 in OpenAI's shape.
async fn no_route(method: Method, uri: axum::http::Uri) -> Error {
    Error::NoRoute(format!("{method} {}", uri.path()))
}

/// 405 in OpenAI's shape, for a known path with another method.
async fn wrong_method(method: Method, uri: axum::http::Uri) -> Error {
    Error::MethodNotAllowed(format!("{method} {}", uri.path()))
}
