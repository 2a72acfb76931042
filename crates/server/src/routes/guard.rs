//! Who may call the server from a browser: the `Host` and `Origin` checks, and the CORS
//! answers for the origins `--allowed-origins` lists.
//!
//! A web page the user visits can make the browser send requests to a server on loopback.
//! Three rules keep such pages out while leaving every non-browser client (curl, the `openai`
//! package, which send no `Origin`) as it was:
//!
//! 1. **Host** (DNS rebinding): while the server listens on a loopback address, the `Host`
//!    header must name a loopback host — `localhost` (or `*.localhost`), `127.x.x.x` or
//!    `[::1]`, with or without a port — else 403 `host_not_allowed`. A rebinding page reaches
//!    `127.0.0.1` under its own name, which shows in `Host`. (A request without `Host` passes:
//!    browsers always send one.)
//! 2. **Origin**: a request with an `Origin` header must come from the server's own origin
//!    (the `Origin`'s host and port equal `Host`, over `http` or `https`) or from one
//!    `--allowed-origins` lists (`*`: any), else 403 `origin_not_allowed`.
//! 3. **CORS** for the allowed origins: a preflight (`OPTIONS` with
//!    `Access-Control-Request-Method`) is answered 204 with the `Access-Control-Allow-*`
//!    headers, before the API-key check (browsers send no credentials on a preflight); other
//!    responses carry `Access-Control-Allow-Origin` with the origin, so the page may read
//!    them.
//!
//! Requiring `Content-Type: application/json` ([`crate::body`]) closes the last path: a page
//! cannot send a JSON body cross-site without a preflight.

use std::net::{Ipv4Addr, Ipv6Addr};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::connections::Listening;
use crate::error::quoted;
use crate::origins::normalize;
pub use crate::origins::AllowedOrigins;
use crate::state::AppState;
use crate::Error;

/// How long a browser may cache a preflight's answer (seconds).
pub const PREFLIGHT_MAX_AGE: u32 = 600;

/// Whether `origin` is the server's own: its host and port are `host`'s (the `Host`
/// header), over `http` or `https` (a TLS proxy in front).
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let (Some(origin), Some(host)) = (normalize(origin), host) else {
        return false;
    };
    ["http", "https"].iter().any(|scheme| {
        origin.starts_with(&format!("{scheme}://"))
            && normalize(&format!("{scheme}://{host}")).as_deref() == Some(origin.as_str())
    })
}

/// Whether a `Host` header names a loopback host: `localhost`, `*.localhost`, an address in
/// `127.0.0.0/8`, or `[::1]`, each with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [v6] or [v6]:port
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if !(after.is_empty() || is_port(after.strip_prefix(':').unwrap_or("x"))) {
            return false;
        }
        return v6.parse::<Ipv6Addr>().is_ok_and(|ip| ip.is_loopback());
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return false,
            None => host,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

/// The middleware: the `Host` check, the `Origin` check, preflights, and
/// `Access-Control-Allow-Origin` on the answers to allowed origins.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = header_text(headers, header::HOST);
    let on_loopback = request
        .extensions()
        .get::<Listening>()
        .is_some_and(|Listening(addr)| addr.ip().is_loopback());
    if on_loopback {
        // Every value: a second `Host` must not slip past the first.
        let foreign = headers
            .get_all(header::HOST)
            .iter()
            .map(|v| v.to_str().unwrap_or("\u{fffd}"))
            .find(|h| !is_loopback_host(h));
        if let Some(host) = foreign {
            return Error::HostNotAllowed(quoted(host)).into_response();
        }
    }
    let Some(origin) = header_text(headers, header::ORIGIN) else {
        return next.run(request).await;
    };
    if same_origin(origin, host) {
        return next.run(request).await;
    }
    if !state.settings.allowed_origins.allows(origin) {
        return Error::OriginNotAllowed(quoted(origin)).into_response();
    }
    let Ok(origin) = HeaderValue::from_str(origin) else {
        return Error::OriginNotAllowed(quoted(origin)).into_response();
    };
    let preflight = request.method() == Method::OPTIONS
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        return preflight_answer(origin, headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS));
    }
    let mut response = next.run(request).await;
    let out = response.headers_mut();
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    out.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("x-request-id"),
    );
    out.append(header::VARY, HeaderValue::from_static("Origin"));
    response
}

/// 204 with what a browser needs to send the real request: the origin, the methods, the
/// headers it asked for, and how long to remember the answer.
fn preflight_answer(origin: HeaderValue, asked_headers: Option<&HeaderValue>) -> Response {
    let allow_headers = asked_headers
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("authorization, content-type"));
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allow_headers);
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from(PREFLIGHT_MAX_AGE),
    );
    out.insert(
        header::VARY,
        HeaderValue::from_static(
            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        ),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST:8080",
            "localhost.",
            "app.localhost:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:8080",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "evil.test",
            "evil.test:8080",
            "localhost.evil.test",
            "128.0.0.1",
            "10.0.0.1:8080",
            "[::2]:8080",
            "[::1]x",
            "localhost:80:80",
            "localhost:http",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn same_origin_compares_host_and_port() {
        assert!(same_origin("http://127.0.0.1:8080", Some("127.0.0.1:8080")));
        assert!(same_origin("https://api.test", Some("api.test")));
        assert!(same_origin("http://localhost", Some("localhost:80")));
        assert!(!same_origin(
            "http://127.0.0.1:9000",
            Some("127.0.0.1:8080")
        ));
        assert!(!same_origin("http://evil.test", Some("127.0.0.1:8080")));
        assert!(!same_origin("null", Some("127.0.0.1:8080")));
        assert!(!same_origin("http://127.0.0.1:8080", None));
    }
}
