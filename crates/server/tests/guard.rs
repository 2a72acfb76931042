//! Issue 22, items 3 and 10, in process: JSON bodies need `Content-Type: application/json`
//! (415), browser requests from other origins are refused (403) unless `--allowed-origins`
//! lists them (then CORS), a loopback server answers only loopback `Host`s (403), and the
//! API key's `Bearer` is read in any case, a 401 asking for it with `WWW-Authenticate`.

mod support;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use sieve_server::connections::Listening;
use sieve_server::routes::guard::AllowedOrigins;
use sieve_server::{router, Settings};
use support::{call, code, state};

const ON_LOOPBACK: &str = "127.0.0.1:8080";

/// A request as a connection to `listening` delivers it, with `Host: 127.0.0.1:8080`.
fn request(method: Method, path: &str, listening: &str) -> axum::http::request::Builder {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "127.0.0.1:8080");
    builder
        .extensions_mut()
        .unwrap()
        .insert(Listening(listening.parse().unwrap()));
    builder
}

fn get(path: &str) -> axum::http::request::Builder {
    request(Method::GET, path, ON_LOOPBACK)
}

fn post_json(path: &str, content_type: Option<&str>, body: &str) -> Request<Body> {
    let mut b = request(Method::POST, path, ON_LOOPBACK);
    if let Some(t) = content_type {
        b = b.header(header::CONTENT_TYPE, t);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

#[tokio::test]
async fn json_routes_refuse_bodies_not_sent_as_json() {
    let app = router(state(Settings::default()));
    let routes = [
        ("/v1/completions", r#"{"prompt": "x", "max_tokens": 1}"#),
        (
            "/v1/chat/completions",
            r#"{"messages": [{"role": "user", "content": "x"}]}"#,
        ),
        ("/tokenize", r#"{"prompt": "x"}"#),
        ("/detokenize", r#"{"tokens": [1]}"#),
    ];
    for (path, body) in routes {
        for content_type in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            None,
        ] {
            let (r, text) = call(&app, post_json(path, content_type, body)).await;
            assert_eq!(
                r.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path} {content_type:?}: {text}"
            );
            assert_eq!(code(&text), "unsupported_media_type");
            assert!(text.contains("Content-Type: application/json"), "{text}");
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(json["error"]["type"], "invalid_request_error");
            assert!(json["error"].as_object().unwrap().contains_key("param"));
        }
    }
    for content_type in [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
    ] {
        let (r, text) = call(
            &app,
            post_json("/tokenize", Some(content_type), r#"{"prompt": "x"}"#),
        )
        .await;
        assert_eq!(r.status(), StatusCode::OK, "{content_type}: {text}");
    }
}

#[tokio::test]
async fn other_origins_are_refused_unless_listed() {
    let app = router(state(Settings::default()));
    for path in ["/v1/models", "/health", "/metrics"] {
        let req = get(path)
            .header(header::ORIGIN, "http://evil.test")
            .body(Body::empty())
            .unwrap();
        let (r, text) = call(&app, req).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path}: {text}");
        assert_eq!(code(&text), "origin_not_allowed");
        assert!(r
            .headers()
            .get(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            .is_none());
    }
    // A page served by this server itself is the same origin.
    let req = get("/v1/models")
        .header(header::ORIGIN, "http://127.0.0.1:8080")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&app, req).await.0.status(), StatusCode::OK);
    // Another port is another origin.
    let req = get("/v1/models")
        .header(header::ORIGIN, "http://127.0.0.1:3000")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&app, req).await.0.status(), StatusCode::FORBIDDEN);
    // A cross-site form post: refused by its origin before its content type is read.
    let mut req = post_json("/v1/completions", Some("text/plain"), r#"{"prompt": "x"}"#);
    req.headers_mut()
        .insert(header::ORIGIN, "http://evil.test".parse().unwrap());
    let (r, text) = call(&app, req).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(code(&text), "origin_not_allowed");
    // No Origin (curl, SDKs): answered as before.
    let req = get("/v1/models").body(Body::empty()).unwrap();
    assert_eq!(call(&app, req).await.0.status(), StatusCode::OK);
}

#[tokio::test]
async fn listed_origins_get_cors_answers_and_preflights() {
    let settings = Settings {
        allowed_origins: AllowedOrigins::parse(&["https://app.test,http://localhost:3000"])
            .unwrap(),
        api_key: Some("k3y".to_string()),
        ..Settings::default()
    };
    let app = router(state(settings));
    // The preflight needs no key, and says what the page may send.
    let req = request(Method::OPTIONS, "/v1/chat/completions", ON_LOOPBACK)
        .header(header::ORIGIN, "https://app.test")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .header(
            header::ACCESS_CONTROL_REQUEST_HEADERS,
            "authorization, content-type, x-stainless-os",
        )
        .body(Body::empty())
        .unwrap();
    let (r, _) = call(&app, req).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let h = r.headers();
    assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], "https://app.test");
    assert!(h[header::ACCESS_CONTROL_ALLOW_METHODS]
        .to_str()
        .unwrap()
        .contains("POST"));
    assert_eq!(
        h[header::ACCESS_CONTROL_ALLOW_HEADERS],
        "authorization, content-type, x-stainless-os"
    );
    assert!(h.contains_key(header::ACCESS_CONTROL_MAX_AGE));
    // The real request carries Access-Control-Allow-Origin, whatever its status.
    let req = get("/v1/models")
        .header(header::ORIGIN, "http://localhost:3000")
        .header(header::AUTHORIZATION, "Bearer k3y")
        .body(Body::empty())
        .unwrap();
    let (r, _) = call(&app, req).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "http://localhost:3000"
    );
    assert!(r.headers()[header::VARY]
        .to_str()
        .unwrap()
        .contains("Origin"));
    let req = get("/v1/models")
        .header(header::ORIGIN, "https://app.test")
        .body(Body::empty())
        .unwrap();
    let (r, _) = call(&app, req).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://app.test"
    );
    // A preflight from an origin not listed is refused.
    let req = request(Method::OPTIONS, "/v1/completions", ON_LOOPBACK)
        .header(header::ORIGIN, "https://evil.test")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .body(Body::empty())
        .unwrap();
    let (r, text) = call(&app, req).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(code(&text), "origin_not_allowed");

    // `*` allows any origin.
    let any = Settings {
        allowed_origins: AllowedOrigins::any(),
        ..Settings::default()
    };
    let app = router(state(any));
    let req = get("/v1/models")
        .header(header::ORIGIN, "https://anywhere.test")
        .body(Body::empty())
        .unwrap();
    let (r, _) = call(&app, req).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN],
        "https://anywhere.test"
    );
}

#[tokio::test]
async fn a_loopback_server_answers_only_loopback_hosts() {
    let app = router(state(Settings::default()));
    let with_host = |host: &str, listening: &str| {
        let mut req = request(Method::GET, "/v1/models", listening)
            .body(Body::empty())
            .unwrap();
        req.headers_mut()
            .insert(header::HOST, host.parse().unwrap());
        req
    };
    // DNS rebinding: the attacker's name, resolved to 127.0.0.1.
    for host in [
        "evil.test",
        "evil.test:8080",
        "localhost.evil.test:8080",
        "10.0.0.2:8080",
    ] {
        let (r, text) = call(&app, with_host(host, ON_LOOPBACK)).await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{host}: {text}");
        assert_eq!(code(&text), "host_not_allowed");
    }
    for host in [
        "localhost",
        "localhost:8080",
        "127.0.0.1:8080",
        "127.0.0.2",
        "[::1]:8080",
    ] {
        let (r, text) = call(&app, with_host(host, ON_LOOPBACK)).await;
        assert_eq!(r.status(), StatusCode::OK, "{host}: {text}");
    }
    let (r, _) = call(&app, with_host("evil.test", "[::1]:8080")).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // A second Host header is read too.
    let mut req = with_host("localhost:8080", ON_LOOPBACK);
    req.headers_mut()
        .append(header::HOST, "evil.test".parse().unwrap());
    assert_eq!(call(&app, req).await.0.status(), StatusCode::FORBIDDEN);
    // Listening on every interface, a name is how clients reach it.
    let (r, _) = call(&app, with_host("my-box.lan:8080", "0.0.0.0:8080")).await;
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case_and_a_401_asks_for_it() {
    let settings = Settings {
        api_key: Some("s3cret".to_string()),
        ..Settings::default()
    };
    let app = router(state(settings));
    let with_auth = |value: Option<&str>| {
        let mut b = get("/v1/models");
        if let Some(v) = value {
            b = b.header(header::AUTHORIZATION, v);
        }
        b.body(Body::empty()).unwrap()
    };
    for value in ["Bearer s3cret", "bearer s3cret", "BEARER s3cret"] {
        let (r, text) = call(&app, with_auth(Some(value))).await;
        assert_eq!(r.status(), StatusCode::OK, "{value}: {text}");
    }
    for value in [
        None,
        Some("Bearer wrong"),
        Some("Basic s3cret"),
        Some("s3cret"),
    ] {
        let (r, text) = call(&app, with_auth(value)).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{value:?}");
        assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
        assert_eq!(code(&text), "invalid_api_key");
    }
}

#[tokio::test]
async fn every_response_carries_a_random_request_id() {
    let app = router(state(Settings::default()));
    let mut ids = Vec::new();
    for path in ["/health", "/v1/models", "/nowhere", "/v1/models"] {
        let (r, _) = call(&app, get(path).body(Body::empty()).unwrap()).await;
        let id = r.headers()["x-request-id"].to_str().unwrap().to_string();
        assert_eq!(id.len(), 32, "{id}");
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4);
}

#[tokio::test]
async fn completion_ids_are_random() {
    let state = state(Settings::default());
    state
        .scheduler
        .wait_ready(std::time::Duration::from_secs(60))
        .expect("the fixture model loads");
    let app = router(state);
    let mut ids = Vec::new();
    for path in ["/v1/completions", "/v1/completions"] {
        let req = post_json(
            path,
            Some("application/json"),
            r#"{"prompt": "Hello", "max_tokens": 1, "seed": 1}"#,
        );
        let (r, text) = call(&app, req).await;
        assert_eq!(r.status(), StatusCode::OK, "{text}");
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        ids.push(json["id"].as_str().unwrap().to_string());
    }
    let hex = |id: &str| id.strip_prefix("cmpl-").map(str::to_string);
    let (a, b) = (hex(&ids[0]).unwrap(), hex(&ids[1]).unwrap());
    assert_eq!(a.len(), 32, "{a}");
    // Sequential ids (cmpl-0000000000000001, …02) share everything but the last digits.
    assert_ne!(a[..16], b[..16], "{a} then {b}");
}
