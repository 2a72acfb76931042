//! The one error type of `sieve-server`, and how each error answers over HTTP: OpenAI's
//! shape, `{"error": {"message", "type", "param", "code"}}`, with the status the kind of
//! mistake calls for.

use std::time::Duration;

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
    /// A known path asked with a method it does not take (405).
    #[error("{0} is not allowed on this path")]
    MethodNotAllowed(String),
    /// The API key is missing or wrong (401, with `WWW-Authenticate: Bearer`).
    #[error("a valid API key is needed: send `Authorization: Bearer <key>`")]
    Unauthorized,
    /// A body sent without `Content-Type: application/json` (415); holds the type given,
    /// clipped, or `none`.
    #[error(
        "the body must be JSON sent with the header `Content-Type: application/json` (got {0})"
    )]
    UnsupportedMediaType(String),
    /// A browser request from another origin that `--allowed-origins` does not list (403);
    /// holds the `Origin`, clipped.
    #[error(
        "cross-origin requests from `{0}` are not allowed; the server's --allowed-origins \
         may list it"
    )]
    OriginNotAllowed(String),
    /// A server listening on loopback got a `Host` that names another host, as a DNS
    /// rebinding attack sends (403); holds the `Host`, clipped.
    #[error(
        "the Host `{0}` is not this server's: on loopback it answers only localhost, \
         127.x.x.x and [::1]"
    )]
    HostNotAllowed(String),
    /// The request body did not arrive in time (408; the connection is closed).
    #[error("the request body did not arrive within {0:?}")]
    BodyTimeout(Duration),
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
    /// What the request asked for could not be generated: its pipeline failed (a grammar
    /// that admits no token, a `logit_bias` that bans every token, stages that contradict
    /// each other). 400 with `"code": "sampling_failed"`.
    #[error("generation failed: {0}")]
    SamplingFailed(String),
    /// The model or the server failed while generating (500).
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
            Error::BadRequest { .. }
            | Error::Sampler(_)
            | Error::PromptTooLong { .. }
            | Error::SamplingFailed(_) => StatusCode::BAD_REQUEST,
            Error::UnknownModel(_) | Error::NoRoute(_) => StatusCode::NOT_FOUND,
            Error::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Error::Unauthorized => StatusCode::UNAUTHORIZED,
            Error::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Error::OriginNotAllowed(_) | Error::HostNotAllowed(_) => StatusCode::FORBIDDEN,
            Error::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
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
            Error::MethodNotAllowed(_) => ("invalid_request_error", Some("method_not_allowed")),
            Error::Unauthorized => ("authentication_error", Some("invalid_api_key")),
            Error::UnsupportedMediaType(_) => {
                ("invalid_request_error", Some("unsupported_media_type"))
            }
            Error::OriginNotAllowed(_) => ("permission_error", Some("origin_not_allowed")),
            Error::HostNotAllowed(_) => ("permission_error", Some("host_not_allowed")),
            Error::BodyTimeout(_) => ("invalid_request_error", Some("request_timeout")),
            Error::BodyTooLarge { .. } => ("invalid_request_error", Some("body_too_large")),
            Error::QueueFull { .. } => ("service_unavailable", Some("queue_full")),
            Error::SamplingFailed(_) => ("invalid_request_error", Some("sampling_failed")),
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
                message: clip(&self.to_string()),
                kind: kind.to_string(),
                param,
                code: code.map(str::to_string),
            },
        }
    }
}

/// The longest line of an error message sent, in characters: a value the request gave is
/// quoted back cut to this (a megabyte key or pipeline does not come back whole).
pub const MAX_MESSAGE_LINE_CHARS: usize = 512;

/// The most lines of an error message sent.
pub const MAX_MESSAGE_LINES: usize = 24;

/// `message` with each line cut to [`MAX_MESSAGE_LINE_CHARS`] characters and at most
/// [`MAX_MESSAGE_LINES`] lines, saying what was cut.
pub fn clip(message: &str) -> String {
    let lines: Vec<&str> = message.split('\n').collect();
    let mut out = String::new();
    for (i, line) in lines.iter().take(MAX_MESSAGE_LINES).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match line.char_indices().nth(MAX_MESSAGE_LINE_CHARS) {
            Some((cut, _)) => {
                let rest = line[cut..].chars().count();
                out.push_str(&line[..cut]);
                out.push_str(&format!("… ({rest} more characters)"));
            }
            None => out.push_str(line),
        }
    }
    if lines.len() > MAX_MESSAGE_LINES {
        out.push_str(&format!(
            "\n… ({} more lines)",
            lines.len() - MAX_MESSAGE_LINES
        ));
    }
    out
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
    /// `invalid_request_error`, `authentication_error`, `permission_error`,
    /// `service_unavailable`, `server_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The request field to blame.
    pub param: Option<String>,
    /// A short machine-readable code.
    pub code: Option<String>,
}

/// The message of an error response, kept in the response's extensions for the request log
/// ([`crate::log`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMessage(pub String);

/// The longest piece of a request (a header's value) an error message quotes.
const QUOTED_CHARS: usize = 100;

/// `text` as an error message quotes it: at most [`QUOTED_CHARS`] characters, `…` after
/// the cut, so an error never echoes a large input whole.
pub(crate) fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = self.body();
        let message = ErrorMessage(body.error.message.clone());
        let mut response = (status, axum::Json(body)).into_response();
        let headers = response.headers_mut();
        match &self {
            Error::QueueFull { .. } | Error::Loading | Error::Unavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
            }
            Error::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // The rest of the body may still be on its way: the connection cannot be reused.
            Error::BodyTimeout(_) => {
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        response.extensions_mut().insert(message);
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
            E::EmptyStop | E::StopLimit(_) => Error::field("stop", e.to_string()),
            E::Sampling(_) => Error::SamplingFailed(e.to_string()),
            E::Stopped(why) => Error::Unavailable(why),
            e => Error::Generation(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoed_values_are_clipped() {
        let key = "k".repeat(1 << 20);
        let e = Error::field("logit_bias", format!("`{key}` is not a token id"));
        let m = e.body().error.message;
        assert!(m.len() < 600, "{} bytes", m.len());
        assert!(
            m.ends_with(&format!("… ({} more characters)", (1 << 20) + 20 - 512)),
            "{m}"
        );
        let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let m = Error::Sampler(many).body().error.message;
        assert_eq!(m.lines().count(), MAX_MESSAGE_LINES + 1);
        assert!(m.ends_with("… (77 more lines)"), "{m}");
        // Short messages and multi-byte characters pass whole.
        assert_eq!(clip("é\n^"), "é\n^");
    }

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

    #[test]
    fn a_401_asks_for_a_bearer_token() {
        let response = Error::Unauthorized.into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
    }

    #[test]
    fn guard_errors_have_their_codes() {
        for (e, status, code) in [
            (
                Error::UnsupportedMediaType("`text/plain`".into()),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
            ),
            (
                Error::OriginNotAllowed("http://evil.test".into()),
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
            ),
            (
                Error::HostNotAllowed("evil.test".into()),
                StatusCode::FORBIDDEN,
                "host_not_allowed",
            ),
            (
                Error::BodyTimeout(Duration::from_secs(1)),
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
            ),
        ] {
            assert_eq!(e.status(), status);
            assert_eq!(e.body().error.code.as_deref(), Some(code));
            let message = e.to_string();
            let response = e.into_response();
            assert_eq!(
                response.extensions().get::<ErrorMessage>(),
                Some(&ErrorMessage(message))
            );
        }
    }

    #[test]
    fn quotes_are_clipped() {
        assert_eq!(quoted("short"), "short");
        let long = "é".repeat(500);
        let q = quoted(&long);
        assert_eq!(q.chars().count(), QUOTED_CHARS + 1);
        assert!(q.ends_with('…'));
    }
}
