//! The one error type of `sieve-server`, and how each error answers over HTTP: OpenAI's
//! shape, `{"error": {"message", "type", "param", "code"}}`, with the status the kind of
//! mistake calls for.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Seconds a client is asked to wait before retrying a refused request.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// Everything that can go wrong while serving a request (or starting the server).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is missing, malformed or out of range (400).
    #[error("{message}")]
    BadRequest {
        /// What is wrong.
        message: String,
        /// The field, when one is to blame.
        param: Option<String>,
    },
    /// The `sampler` pipeline does not compile (400, `"param": "sampler"`); the message is
    /// the rendered diagnostic with its caret.
    #[error("{0}")]
    Sampler(String),
    /// The prompt does not fit in the model's context (400).
    #[error("the prompt is {tokens} tokens, longer than the model's context of {context}")]
    PromptTooLong {
        /// Prompt tokens.
        tokens: usize,
        /// The model's context.
        context: usize,
        /// `prompt` or `messages`.
        param: &'static str,
    },
    /// The request names a model this server does not serve (404).
    #[error("the model `{0}` does not exist; GET /v1/models lists the one served")]
    UnknownModel(String),
    /// No route here (404).
    #[error("no route {0}")]
    NoRoute(String),
    /// The API key is missing or wrong (401).
    #[error("a valid API key is needed: send `Authorization: Bearer <key>`")]
    Unauthorized,
    /// The request body is larger than the server accepts (413).
    #[error("the request body is larger than {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// Too many requests wait already (503 with `Retry-After`).
    #[error("the server is busy: {capacity} requests are already waiting; retry later")]
    QueueFull {
        /// The queue's capacity.
        capacity: usize,
    },
    /// The model is still loading (503 with `Retry-After`).
    #[error("the model is loading; retry later")]
    Loading,
    /// The model or a stage failed while generating (500).
    #[error("generation failed: {0}")]
    Generation(String),
    /// The scheduler does not run (503).
    #[error("{0}")]
    Unavailable(String),
    /// The server could not bind or serve.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A 400 about `param`.
    pub fn field(param: &str, message: impl Into<String>) -> Self {
        Error::BadRequest {
            message: message.into(),
            param: Some(param.to_string()),
        }
    }

    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest { .. } | Error::Sampler(_) | Error::PromptTooLong { .. } => {
                StatusCode::BAD_REQUEST
            }
            Error::UnknownModel(_) | Error::NoRoute(_) => StatusCode::NOT_FOUND,
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Error::QueueFull { .. } | Error::Loading | Error::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Error::Generation(_) | Error::Io(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// OpenAI's error object for this error.
    pub fn body(&self) -> ErrorBody {
        let (kind, code) = match self {
            Error::BadRequest { .. } | Error::Sampler(_) => ("invalid_request_error", None),
            Error::PromptTooLong { .. } => {
                ("invalid_request_error", Some("context_length_exceeded"))
            }
            Error::UnknownModel(_) => ("invalid_request_error", Some("model_not_found")),
            Error::NoRoute(_) => ("invalid_request_error", Some("not_found")),
            Error::Unauthorized => ("authentication_error", Some("invalid_api_key")),
            Error::BodyTooLarge { .. } => ("invalid_request_error", Some("body_too_large")),
            Error::QueueFull { .. } => ("service_unavailable", Some("queue_full")),
            Error::Loading => ("service_unavailable", Some("model_loading")),
            Error::Unavailable(_) => ("service_unavailable", None),
            Error::Generation(_) | Error::Io(_) => ("server_error", None),
        };
        let param = match self {
            Error::BadRequest { param, .. } => param.clone(),
            Error::Sampler(_) => Some("sampler".to_string()),
            Error::PromptTooLong { param, .. } => Some((*param).to_string()),
            Error::UnknownModel(_) => Some("model".to_string()),
            _ => None,
        };
        ErrorBody {
            error: ErrorObject {
                message: self.to_string(),
                kind: kind.to_string(),
                param,
                code: code.map(str::to_string),
            },
        }
    }
}

/// `{"error": {…}}`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorObject,
}

/// OpenAI's error object.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct ErrorObject {
    /// What went wrong.
    pub message: String,
    /// `invalid_request_error`, `authentication_error`, `service_unavailable`,
    /// `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field to blame.
    pub param: Option<String>,
    /// A short machine-readable code.
    pub code: Option<String>,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, axum::Json(self.body())).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}

impl From<sieve_engine::Error> for Error {
    fn from(e: sieve_engine::Error) -> Self {
        use sieve_engine::Error as E;
        match e {
            E::QueueFull { capacity } => Error::QueueFull { capacity },
            E::ContextOverflow { tokens, context } => Error::PromptTooLong {
                tokens,
                context,
                param: "prompt",
            },
            E::Choices { .. } => Error::field("n", e.to_string()),
            E::EmptyPrompt => Error::field("prompt", e.to_string()),
            E::EmptyStop => Error::field("stop", e.to_string()),
            E::Stopped(why) => Error::Unavailable(why),
            e => Error::Generation(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_shapes() {
        let e = Error::Sampler("line 1…".into());
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(e.body().error.param.as_deref(), Some("sampler"));
        let e: Error = sieve_engine::Error::QueueFull { capacity: 3 }.into();
        assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
        let response = e.into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert_eq!(Error::Unauthorized.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            Error::BodyTooLarge { limit: 1 }.status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        let json = serde_json::to_value(Error::UnknownModel("x".into()).body()).unwrap();
        assert_eq!(json["error"]["type"], "invalid_request_error");
        assert_eq!(json["error"]["code"], "model_not_found");
        assert_eq!(json["error"]["param"], "model");
    }
}
