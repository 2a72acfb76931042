//! `GET /health` (200 when the model is loaded, 503 while it loads or after it failed) and
//! `GET /metrics` (Prometheus text).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use sieve_engine::scheduler::Status;

use crate::state::AppState;
use crate::Error;

/// `GET /health`: `{"status": "ok"}`, or 503 in OpenAI's error shape.
pub async fn health(State(state): State<AppState>) -> Response {
    match state.scheduler.status() {
        Status::Ready => {
            (StatusCode::OK, Json(serde_json::json!({"status": "ok"}))).into_response()
        }
        Status::Loading => Error::Loading.into_response(),
        Status::Stopped(why) => Error::Unavailable(why).into_response(),
    }
}

/// `GET /metrics`.
pub async fn metrics(State(state): State<AppState>) -> Response {
    let text = state.metrics.render(state.gauges());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}
