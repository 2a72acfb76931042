//! Issue 22, item 7, over real sockets: the header-read, keep-alive and body-read timeouts,
//! the bound on open connections, and the shutdown deadline (shortened here).

mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use sieve_server::connections::serve_router;
use sieve_server::{ConnectionLimits, Settings};
use support::{connect, health, read_to_close, state, Running};

/// Generous for a loaded machine, far below the hour a missing timeout would take.
const SLACK: Duration = Duration::from_secs(5);

fn settings(limits: ConnectionLimits) -> Settings {
    Settings {
        connections: limits,
        ..Settings::default()
    }
}

fn limits(header_read_ms: u64, keep_alive_ms: u64, shutdown_ms: u64) -> ConnectionLimits {
    ConnectionLimits {
        header_read: Duration::from_millis(header_read_ms),
        keep_alive: Duration::from_millis(keep_alive_ms),
        shutdown: Duration::from_millis(shutdown_ms),
        max_connections: 64,
    }
}

#[test]
fn a_client_trickling_its_headers_is_cut_at_the_header_timeout() {
    // The keep-alive timeout is shorter, but every byte resets it: only the header timeout
    // can end a slowloris.
    let server = Running::serve(state(settings(limits(600, 150, 10_000))));
    let mut stream = connect(server.addr);
    let mut reader = stream.try_clone().unwrap();
    let start = Instant::now();
    let closed = std::thread::spawn(move || {
        let (_, closed) = read_to_close(&mut reader);
        closed.then(|| start.elapsed())
    });
    let head = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
    let mut sent = 0;
    while !closed.is_finished() && start.elapsed() < SLACK * 2 {
        let byte = head.get(sent).copied().unwrap_or(b'a');
        if stream.write_all(&[byte]).is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = closed
        .join()
        .unwrap()
        .expect("the server closed the connection");
    assert!(
        after >= Duration::from_millis(500),
        "closed after {after:?}"
    );
    assert!(after < SLACK, "closed after {after:?}");
}

#[test]
fn an_idle_kept_alive_connection_is_closed_at_the_keep_alive_timeout() {
    let server = Running::serve(state(settings(limits(60_000, 300, 10_000))));
    let mut stream = connect(server.addr);
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let start = Instant::now();
    let (text, closed) = read_to_close(&mut stream);
    let after = start.elapsed();
    assert!(text.starts_with("HTTP/1.1 "), "{text}");
    assert!(closed, "the connection stayed open: {text}");
    assert!(
        after >= Duration::from_millis(250),
        "closed after {after:?}"
    );
    assert!(after < SLACK, "closed after {after:?}");
}

#[test]
fn past_the_bound_connections_wait_until_silent_ones_time_out() {
    let mut limits = limits(500, 60_000, 10_000);
    limits.max_connections = 3;
    let server = Running::serve(state(settings(limits)));
    let start = Instant::now();
    let mut silent: Vec<_> = (0..3).map(|_| connect(server.addr)).collect();
    // Let the server accept them all, so /health comes fourth.
    std::thread::sleep(Duration::from_millis(100));
    let status = health(server.addr);
    let waited = start.elapsed();
    assert!(status.starts_with("HTTP/1.1 "), "no answer: {status:?}");
    assert!(
        waited >= Duration::from_millis(400),
        "/health was answered beside 3 open connections with a bound of 3 ({waited:?})"
    );
    assert!(waited < SLACK, "{waited:?}");
    for stream in &mut silent {
        let (text, closed) = read_to_close(stream);
        assert!(closed, "a silent connection stayed open");
        assert!(text.is_empty(), "{text}");
    }
}

#[test]
fn a_body_that_does_not_arrive_is_answered_408() {
    let settings = Settings {
        body_read_timeout: Duration::from_millis(300),
        ..settings(limits(60_000, 60_000, 10_000))
    };
    let server = Running::serve(state(settings));
    let mut stream = connect(server.addr);
    stream
        .write_all(
            b"POST /tokenize HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"prompt\": ",
        )
        .unwrap();
    let start = Instant::now();
    let (text, closed) = read_to_close(&mut stream);
    let after = start.elapsed();
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout"), "{text}");
    assert!(closed, "the connection stayed open");
    assert!(
        after >= Duration::from_millis(250) && after < SLACK,
        "{after:?}"
    );
}

#[test]
fn shutdown_ends_a_partial_request_at_the_deadline() {
    // Long header and keep-alive timeouts: only the shutdown deadline can end this.
    let mut server = Running::serve(state(settings(limits(60_000, 60_000, 400))));
    let mut partial = connect(server.addr);
    partial
        .write_all(b"POST /v1/completions HTTP/1.1\r\nHost: loc")
        .unwrap();
    let mut kept = connect(server.addr);
    kept.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    server.signal();
    let took = server
        .wait(SLACK)
        .expect("the server did not return after the shutdown deadline");
    assert!(
        took >= Duration::from_millis(300),
        "returned after {took:?}"
    );
    let (_, closed) = read_to_close(&mut partial);
    assert!(closed);
    let (text, closed) = read_to_close(&mut kept);
    assert!(text.starts_with("HTTP/1.1 "), "{text}");
    assert!(closed);
    assert!(
        std::net::TcpStream::connect(server.addr).is_err(),
        "a stopped server accepted a connection"
    );
}

/// A route that answers after 300 ms, and one that streams forever.
fn slow_and_endless() -> Router {
    Router::new()
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "done"
            }),
        )
        .route(
            "/endless",
            get(|| async {
                let ticks = futures_util::stream::unfold(0u64, |i| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Some((Ok::<_, std::io::Error>(format!("tick {i}\n")), i + 1))
                });
                Body::from_stream(ticks)
            }),
        )
}

#[test]
fn shutdown_lets_running_requests_finish_then_ends_endless_streams() {
    let mut server = Running::start(|listener, shutdown| async move {
        serve_router(
            listener,
            slow_and_endless(),
            limits(60_000, 60_000, 800),
            shutdown,
        )
        .await
        .expect("serve");
    });
    let mut slow = connect(server.addr);
    slow.write_all(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    // A stream whose client never reads.
    let mut endless = connect(server.addr);
    endless
        .write_all(b"GET /endless HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    server.signal();
    let (text, closed) = read_to_close(&mut slow);
    assert!(
        text.starts_with("HTTP/1.1 200") && text.ends_with("done"),
        "{text}"
    );
    assert!(closed, "the connection stayed open after its last response");
    let took = server
        .wait(SLACK)
        .expect("the server did not return after the shutdown deadline");
    assert!(
        took >= Duration::from_millis(500),
        "returned after {took:?}"
    );
    let (text, closed) = read_to_close(&mut endless);
    assert!(closed, "the endless stream was not ended");
    assert!(text.contains("tick 0"), "{text}");
}

#[test]
fn shutdown_without_open_requests_returns_at_once() {
    let mut server = Running::serve(state(settings(limits(60_000, 60_000, 30_000))));
    let mut idle = connect(server.addr);
    std::thread::sleep(Duration::from_millis(100));
    server.signal();
    let took = server.wait(SLACK).expect("the server did not return");
    assert!(took < Duration::from_secs(2), "{took:?}");
    let (_, closed) = read_to_close(&mut idle);
    assert!(closed);
}
