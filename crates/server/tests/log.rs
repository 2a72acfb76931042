//! Issue 22, item 11: one log line per request — its id (the `x-request-id` header), method,
//! route, status, latency, and the error's message for 4xx and 5xx — and no prompt text.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::Value;
use sieve_server::connections::Listening;
use sieve_server::{router, Settings};
use support::{call, state};

/// Where the test's subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<Value> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

const SECRET: &str = "PROMPT-TEXT-NOT-FOR-LOGS";

fn post(path: &str, content_type: &str, body: String) -> Request<Body> {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, content_type);
    builder
        .extensions_mut()
        .unwrap()
        .insert(Listening("127.0.0.1:8080".parse().unwrap()));
    builder.body(Body::from(body)).unwrap()
}

#[tokio::test]
async fn each_request_writes_one_line_with_its_id_status_and_error() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let app = router(state(Settings::default()));

    let body = format!(r#"{{"prompt": "{SECRET}", "max_tokens": 1}}"#);
    let (refused, _) = call(&app, post("/v1/completions", "text/plain", body.clone())).await;
    assert_eq!(refused.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let bad = format!(r#"{{"prompt": "{SECRET}", "max_tokens": "many"}}"#);
    let (invalid, _) = call(&app, post("/v1/completions", "application/json", bad)).await;
    assert_eq!(invalid.status(), StatusCode::BAD_REQUEST);
    let (tokenized, _) = call(&app, post("/tokenize", "application/json", body)).await;
    assert_eq!(tokenized.status(), StatusCode::OK);

    let lines = captured.lines();
    assert_eq!(lines.len(), 3, "{}", captured.text());
    let id =
        |r: &axum::http::Response<()>| r.headers()["x-request-id"].to_str().unwrap().to_string();

    let line = &lines[0];
    assert_eq!(line["message"], "request");
    assert_eq!(line["request_id"], id(&refused));
    assert_eq!(line["method"], "POST");
    assert_eq!(line["route"], "/v1/completions");
    assert_eq!(line["status"], 415);
    assert!(line["latency_ms"].as_f64().is_some(), "{line}");
    assert_eq!(line["complete"], true);
    assert!(
        line["error"].as_str().unwrap().contains("Content-Type"),
        "{line}"
    );

    let line = &lines[1];
    assert_eq!(line["request_id"], id(&invalid));
    assert_eq!(line["status"], 400);
    assert!(
        line["error"].as_str().unwrap().contains("max_tokens"),
        "{line}"
    );

    let line = &lines[2];
    assert_eq!(line["request_id"], id(&tokenized));
    assert_eq!(line["route"], "/tokenize");
    assert_eq!(line["status"], 200);
    assert!(line.get("error").is_none(), "{line}");

    assert!(!captured.text().contains(SECRET), "{}", captured.text());
}

#[tokio::test]
async fn a_completion_s_line_counts_its_tokens_in_and_out() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let app = router(state(Settings::default()));
    let body = r#"{"prompt": [1, 2, 3], "max_tokens": 2, "ignore_eos": true, "n": 2}"#;
    // The model loads on the scheduler's thread: 503 until it has.
    loop {
        let (r, text) = call(
            &app,
            post("/v1/completions", "application/json", body.into()),
        )
        .await;
        if r.status() == StatusCode::OK {
            break;
        }
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{text}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let lines = captured.lines();
    let line = lines.last().unwrap();
    assert_eq!(line["status"], 200);
    assert_eq!(line["tokens_in"], 3, "{line}");
    assert_eq!(line["tokens_out"], 4, "{line}");
}
