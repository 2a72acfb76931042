//! The API-key check: with a key set (`--api-key`, `--api-key-file` or `SIEVE_API_KEY`), every
//! route but `/health` and `/metrics` needs `Authorization: Bearer <key>`; the scheme is read
//! in any case (RFC 7235 §2.1), and a refusal is a 401 with `WWW-Authenticate: Bearer`.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::state::AppState;
use crate::Error;

/// The middleware: 401 unless the request carries the key (or the route is open).
pub async fn api_key(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let open = matches!(request.uri().path(), "/health" | "/metrics");
    if let Some(key) = state.settings.api_key.as_deref().filter(|_| !open) {
        let given = bearer_token(request.headers());
        if !given.is_some_and(|g| constant_time_eq(g.as_bytes(), key.as_bytes())) {
            return Error::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

/// The token of `Authorization: Bearer <token>`, the scheme in any case, spaces around the
/// token ignored.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Compares two byte strings in time that depends on their lengths only.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn keys_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }

    fn token(value: &str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        bearer_token(&headers).map(str::to_string)
    }

    #[test]
    fn the_scheme_is_case_insensitive() {
        for value in ["Bearer k3y", "bearer k3y", "BEARER k3y", "bEaReR  k3y "] {
            assert_eq!(token(value).as_deref(), Some("k3y"), "{value}");
        }
        for value in ["Basic k3y", "Bearerk3y", "Bearer", "Bearer   ", "k3y"] {
            assert_eq!(token(value), None, "{value}");
        }
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }
}
