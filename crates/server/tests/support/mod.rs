//! A server on a tiny fixture model's text side for the integration tests: its state,
//! in-process requests (`oneshot`), and a real server on a loopback socket with its own runtime
//! thread.
//!
//! The tokenizer, chat template, generation config and sizes are the fixture's own (read by
//! `sieve-text`); the weights are not loaded: a real scheduler runs [`HashModel`], a model
//! without weights, so these tests (and `sieve-server`) link no Burn. The server on the real
//! fixture model is tested by the command line's tests (`crates/cli/tests/serve*.rs`).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, Response};
use axum::Router;
use http_body_util::BodyExt;
use sieve_engine::scheduler::SchedulerConfig;
pub use sieve_engine::testing::HashModel;
use sieve_engine::{BoxError, Detokenize, Scheduler};
use sieve_server::{AppState, Defaults, ModelText, Settings};
use sieve_text::{
    ChatTemplate, ConfigJson, GenerationConfig, Tokenizer, CONFIG_FILE, GENERATION_CONFIG_FILE,
    TOKENIZER_FILE,
};
use tower::ServiceExt;

/// The fixture model's directory.
pub fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/models/llama-gqa-tied")
}

/// A server state on the fixture model's text side, generating with a [`HashModel`] of its
/// vocabulary and context (made on the scheduler's thread, as real weights load there).
pub fn state(settings: Settings) -> AppState {
    let dir = fixture();
    let config = ConfigJson::from_file(&dir.join(CONFIG_FILE)).expect("the fixture's config");
    let generation =
        GenerationConfig::from_file(&dir.join(GENERATION_CONFIG_FILE)).expect("its defaults");
    let field = |name: &str| -> usize {
        config
            .get(name)
            .expect("a size")
            .unwrap_or_else(|| panic!("the fixture's config.json names {name}"))
    };
    let (vocab_size, context) = (field("vocab_size"), field("max_position_embeddings"));
    let eos = generation.eos_ids_or(&config.eos_token_ids().expect("its EOS ids"));
    let tokenizer = Tokenizer::from_file(&dir.join(TOKENIZER_FILE)).expect("its tokenizer");
    let tokenizer = Arc::new(tokenizer);
    let vocab = Arc::new(tokenizer.vocab(vocab_size, eos.clone()));
    let text = ModelText {
        name: "tiny".to_string(),
        tokenizer: Arc::clone(&tokenizer),
        vocab: Arc::clone(&vocab),
        vocab_size,
        context,
        eos,
        chat_template: ChatTemplate::from_dir(&dir).map_err(|e| e.to_string()),
    };
    let defaults = Defaults {
        pipeline: sieve_dsl::Parsed::parse("top_k(40) | dist", &sieve_samplers::builtin_registry())
            .expect("the default pipeline"),
        generation,
    };
    let detokenizer: Arc<dyn Detokenize + Send + Sync> = tokenizer;
    let config = SchedulerConfig {
        parallel: 4,
        max_queue: 16,
        prefill_chunk: 64,
    };
    let load = move || Ok::<_, BoxError>(HashModel::new(vocab_size, 4.0, 0).with_context(context));
    let scheduler =
        Scheduler::start(load, detokenizer, Some(vocab), config).expect("start the scheduler");
    AppState::new(
        text,
        sieve_samplers::builtin_registry(),
        defaults,
        scheduler,
        settings,
    )
}

/// Sends one request through `router` in process; the status, the response (body read) and
/// the body as text.
pub async fn call(router: &Router, request: Request<Body>) -> (Response<()>, String) {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.expect("the body").to_bytes();
    (
        Response::from_parts(parts, ()),
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// The JSON of an error body's `error.code`.
pub fn code(body: &str) -> String {
    let json: serde_json::Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    json["error"]["code"].as_str().unwrap_or("").to_string()
}

/// The shutdown future a test completes.
pub type Shutdown = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A server on `127.0.0.1:0`, serving on its own runtime thread until [`Running::stop`].
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<()>,
}

impl Running {
    /// Starts `sieve_server::serve` on `state`.
    pub fn serve(state: AppState) -> Running {
        Running::start(move |listener, shutdown| async move {
            sieve_server::serve(listener, state, shutdown)
                .await
                .expect("serve");
        })
    }

    /// Starts `serve(listener, shutdown)` on a runtime of its own.
    pub fn start<F, Fut>(serve: F) -> Running
    where
        F: FnOnce(tokio::net::TcpListener, Shutdown) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()>,
    {
        let (addr_tx, addr_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let shutdown: Shutdown = Box::pin(async move {
                    let _ = stop_rx.await;
                });
                serve(listener, shutdown).await;
            });
            runtime.shutdown_timeout(Duration::from_millis(100));
            let _ = done_tx.send(());
        });
        Running {
            addr: addr_rx.recv().expect("the address"),
            stop: Some(stop_tx),
            done: done_rx,
        }
    }

    /// Completes the shutdown future (as SIGTERM does) without waiting.
    pub fn signal(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// How long the server took to return after [`Running::signal`], if it did within
    /// `limit`.
    pub fn wait(&self, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        self.done.recv_timeout(limit).ok().map(|()| start.elapsed())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.signal();
    }
}

/// A connected socket with a read timeout.
pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

/// Reads until the server closes the connection (or the read timeout); what was read, and
/// whether it was closed.
pub fn read_to_close(stream: &mut TcpStream) -> (String, bool) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&seen).into_owned(), true),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&seen).into_owned(), true)
            }
            Err(_) => return (String::from_utf8_lossy(&seen).into_owned(), false),
        }
    }
}

/// `GET /health` on a fresh connection (`Connection: close`); the status line.
pub fn health(addr: SocketAddr) -> String {
    let mut stream = connect(addr);
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let (text, _) = read_to_close(&mut stream);
    text.lines().next().unwrap_or("").to_string()
}
