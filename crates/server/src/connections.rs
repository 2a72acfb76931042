//! The accept loop: one hyper HTTP/1.1 connection per socket, with the deadlines
//! `axum::serve` lacks, a bound on open connections, and a shutdown with a deadline.
//!
//! - **Header read** ([`ConnectionLimits::header_read`]): a request's head must arrive whole
//!   within this time of the server starting to wait for it — on a new connection, and
//!   between the requests of a kept-alive one (hyper's `header_read_timeout`); else the
//!   connection is closed. A client trickling its headers byte by byte (slowloris) cannot
//!   hold a connection longer. (So a kept-alive connection waits for its next request at
//!   most the smaller of this and the keep-alive timeout.)
//! - **Keep-alive** ([`ConnectionLimits::keep_alive`]): a connection with no request in
//!   flight and no byte received for this long is closed. A response counts as in flight
//!   until its body has been written, so a long stream is never cut.
//! - **Body read**: see [`crate::body`] (408 from the JSON routes).
//! - **Open connections** ([`ConnectionLimits::max_connections`]): past the bound, new
//!   connections wait in the kernel's backlog until one closes; the timeouts above make sure
//!   silent sockets do close, so `/health` gets its turn.
//! - **Shutdown**: once `shutdown` completes, the listener closes (new connections are
//!   refused), idle connections close, and running requests may finish for
//!   [`ConnectionLimits::shutdown`]; then every connection left is dropped — streams end,
//!   their sequences are cancelled, partial requests are cut — and [`serve_router`] returns.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tower::ServiceExt;

use crate::body_end::{BodyEnd, Guarded};

/// How long the loop waits after an accept fails for want of resources (file descriptors)
/// before it tries again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The address the connection's listener is bound to, put in each request's extensions (the
/// `Host` check of [`crate::routes::guard`] runs when it is loopback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listening(pub SocketAddr);

/// The deadlines and the bound of the accept loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The longest wait for a request's whole head (`--header-timeout`).
    pub header_read: Duration,
    /// How long a connection with nothing in flight may stay silent
    /// (`--keep-alive-timeout`).
    pub keep_alive: Duration,
    /// How long running requests may go on after the shutdown signal
    /// (`--shutdown-timeout`).
    pub shutdown: Duration,
    /// The most connections open at once (`--max-connections`; at least 1).
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    /// 10 s for a head, 5 s idle, 10 s to finish at shutdown, 512 connections.
    fn default() -> Self {
        ConnectionLimits {
            header_read: Duration::from_secs(10),
            keep_alive: Duration::from_secs(5),
            shutdown: Duration::from_secs(10),
            max_connections: 512,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then as described in the
/// [module documentation](self).
///
/// # Errors
/// When the listener's address cannot be read; accept failures are retried, not returned.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = watch::channel(());
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let socket = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; retrying");
                    tokio::select! {
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    }
                }
            },
        };
        let _ = socket.set_nodelay(true);
        let conn = connection(
            socket,
            router.clone(),
            local,
            limits,
            stop_rx.clone(),
            permit,
        );
        connections.spawn(conn);
    }
    drop(listener);
    drop(stop_tx);
    let drained = tokio::time::timeout(limits.shutdown, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = connections.len(),
            deadline = ?limits.shutdown,
            "shutdown deadline passed: closing the connections left"
        );
        connections.shutdown().await;
    }
    Ok(())
}

/// Errors of one connection that came and went (the loop accepts the next at once).
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it closes, its keep-alive deadline passes, or the server
/// stops (`stop` closes).
async fn connection(
    socket: TcpStream,
    router: Router,
    local: SocketAddr,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<()>,
    _permit: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        socket,
        activity: Arc::clone(&activity),
    });
    let tracked = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(Listening(local));
        let busy = Busy::new(Arc::clone(&tracked));
        let router = router.clone();
        async move {
            let response = router.oneshot(request.map(Body::new)).await?;
            Ok::<_, std::convert::Infallible>(
                response.map(|body| Body::new(Guarded::new(body, busy))),
            )
        }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let mut closing = false;
    loop {
        tokio::select! {
            served = conn.as_mut() => {
                if let Err(e) = served {
                    tracing::debug!(error = %e, "connection ended");
                }
                return;
            }
            _ = stop.changed(), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
            () = activity.idle_for(limits.keep_alive), if !closing => {
                closing = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// When a connection last did something, and how many of its responses are unfinished.
#[derive(Debug)]
struct Activity {
    opened: Instant,
    /// Milliseconds after `opened` of the last byte read or response finished.
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
        Activity {
            opened: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// Completes once nothing has been in flight nor read for `limit`.
    async fn idle_for(&self, limit: Duration) {
        loop {
            let last = self.opened + Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let quiet = last.elapsed();
            if self.in_flight.load(Ordering::Relaxed) == 0 && quiet >= limit {
                return;
            }
            tokio::time::sleep(limit.saturating_sub(quiet).max(Duration::from_millis(10))).await;
        }
    }
}

/// One request in flight, from its head's arrival to its response body's end.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        activity.touch();
        Busy(activity)
    }
}

/// The request stays in flight until its response body is written or dropped.
impl BodyEnd for Busy {}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The socket, noting each read that brings bytes.
struct Watched {
    socket: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.socket).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().socket).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().socket).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.socket.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().socket).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().socket).poll_shutdown(cx)
    }
}
