//! What every handler shares: the model's text side (tokenizer, chat template, EOS ids), the
//! stage registry, the scheduler, the metrics and the server's settings.

use std::sync::Arc;
use std::time::Duration;

use sieve_core::{Registry, Vocab};
use sieve_engine::scheduler::Status;
use sieve_engine::Scheduler;
use sieve_text::{ChatTemplate, Tokenizer};

use crate::connections::ConnectionLimits;
use crate::metrics::{Gauges, Metrics};
use crate::openai::common::unix_now;
use crate::origins::AllowedOrigins;
use crate::sampling::Defaults;
use crate::tools::ToolParser;
use crate::work::{WorkLimits, WorkPool};

/// The most alternatives a request may ask for with each token's log-probability.
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// The model's text side, read before its weights.
pub struct ModelText {
    /// The name requests use (`/v1/models` lists it).
    pub name: String,
    /// The tokenizer.
    pub tokenizer: Arc<Tokenizer>,
    /// Every token's bytes and the EOS ids, for the stages.
    pub vocab: Arc<Vocab>,
    /// The model's vocabulary size (ids at or past it are refused).
    pub vocab_size: usize,
    /// The model's context length.
    pub context: usize,
    /// End-of-sequence ids.
    pub eos: Vec<u32>,
    /// The chat template, or why there is none.
    pub chat_template: Result<ChatTemplate, String>,
}

/// The server's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// When set, every `/v1/*`, `/tokenize` and `/detokenize` request must send
    /// `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// The largest request body accepted (bytes).
    pub max_body_bytes: usize,
    /// The longest a JSON body may take to arrive whole (408 past it).
    pub body_read_timeout: Duration,
    /// The origins, besides the server's own, whose browser requests are answered (with
    /// CORS headers); others get 403.
    pub allowed_origins: AllowedOrigins,
    /// The accept loop's deadlines and bound on open connections.
    pub connections: ConnectionLimits,
    /// How many requests are prepared at once (template, tokenizer, pipeline), and how many
    /// may wait for that.
    pub work: WorkLimits,
    /// Tokens per choice when a request gives no `max_tokens` (and `generation_config.json`
    /// no `max_new_tokens`): what `sieve generate` uses.
    pub default_max_tokens: usize,
    /// How chat answers to requests with `tools` are searched for tool calls.
    pub tool_parser: ToolParser,
}

impl Default for Settings {
    /// No key, 4 MiB bodies read within 30 s, no other origin, [`ConnectionLimits`]'
    /// defaults, 128 tokens, tool calls in the format the template suggests.
    fn default() -> Self {
        Settings {
            api_key: None,
            max_body_bytes: 4 << 20,
            body_read_timeout: Duration::from_secs(30),
            allowed_origins: AllowedOrigins::none(),
            connections: ConnectionLimits::default(),
            work: WorkLimits::default(),
            default_max_tokens: 128,
            tool_parser: ToolParser::Auto,
        }
    }
}

/// Everything a handler needs, cheap to clone.
#[derive(Clone)]
pub struct AppState(pub Arc<Shared>);

/// The shared parts of [`AppState`].
pub struct Shared {
    /// The model's text side.
    pub model: ModelText,
    /// The stages requests may name.
    pub registry: Registry,
    /// The default pipeline (parsed once at startup) and generation defaults.
    pub defaults: Defaults,
    /// The scheduler running the model.
    pub scheduler: Scheduler,
    /// Counters and histograms.
    pub metrics: Metrics,
    /// Where requests are prepared, off the async workers.
    pub work: WorkPool,
    /// Settings.
    pub settings: Settings,
    /// Unix seconds at start.
    pub started: u64,
}

impl AppState {
    /// The state of a server.
    pub fn new(
        model: ModelText,
        registry: Registry,
        defaults: Defaults,
        scheduler: Scheduler,
        settings: Settings,
    ) -> Self {
        AppState(Arc::new(Shared {
            model,
            registry,
            defaults,
            scheduler,
            metrics: Metrics::default(),
            work: WorkPool::new(settings.work),
            settings,
            started: unix_now(),
        }))
    }

    /// The scheduler's gauges now.
    pub fn gauges(&self) -> Gauges {
        let s = &self.0.scheduler;
        Gauges {
            waiting: s.waiting(),
            running: s.running(),
            ready: s.status() == Status::Ready,
        }
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}
