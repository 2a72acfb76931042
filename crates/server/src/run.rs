//! Running the server as a command does: a tokio runtime, the listening socket, and a
//! shutdown on Ctrl-C, SIGTERM, or a model that fails to load, bounded by the shutdown
//! deadline ([`crate::connections`]).

use std::net::SocketAddr;
use std::time::Duration;

use sieve_engine::scheduler::Status;

use crate::state::AppState;
use crate::{serve, Error, Result};

/// How long a load may take before the watcher looks again.
const LOAD_POLL: Duration = Duration::from_secs(3600);

/// How long the runtime waits, once the server has stopped, for blocking work still running
/// (the load watcher waits for a model that may still be loading).
const RUNTIME_GRACE: Duration = Duration::from_millis(500);

/// Binds `host:port` (port 0 picks a free one), calls `on_listening` with the address bound,
/// and serves `state` until Ctrl-C or SIGTERM (then lets running requests end, for at most
/// the shutdown deadline), or until the model fails to load.
///
/// # Errors
/// [`Error::Io`] when the runtime cannot start or the address cannot be bound (the message
/// names it); [`Error::Unavailable`] when the model does not load; what `on_listening`
/// returns.
pub fn run(
    host: &str,
    port: u16,
    state: AppState,
    on_listening: impl FnOnce(SocketAddr) -> Result<()>,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("sieve-http")
        .build()?;
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((host, port))
            .await
            .map_err(|e| {
                Error::Io(std::io::Error::new(
                    e.kind(),
                    format!("cannot listen on {host}:{port}: {e}"),
                ))
            })?;
        on_listening(listener.local_addr()?)?;
        let (failed_tx, failed_rx) = tokio::sync::oneshot::channel::<String>();
        let watched = state.clone();
        tokio::task::spawn_blocking(move || loop {
            match watched.scheduler.wait_ready(LOAD_POLL) {
                Ok(Status::Loading) => continue,
                Ok(_) => return,
                Err(e) => {
                    let _ = failed_tx.send(e.to_string());
                    return;
                }
            }
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, state, async move {
            let _ = stop_rx.await;
        }));
        let outcome = tokio::select! {
            () = signal() => Ok(()),
            failed = failed_rx => match failed {
                Ok(why) => Err(Error::Unavailable(why)),
                // The watcher ended without a failure: the model loaded.
                Err(_) => {
                    signal().await;
                    Ok(())
                }
            },
        };
        let _ = stop_tx.send(());
        match server.await {
            Ok(served) => served?,
            Err(e) => return Err(Error::Unavailable(format!("the server stopped: {e}"))),
        }
        outcome
    });
    runtime.shutdown_timeout(RUNTIME_GRACE);
    served
}

/// Completes on Ctrl-C or (on Unix) SIGTERM; never when neither can be listened for.
async fn signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
